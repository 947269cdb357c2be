// Launchers: start workers of this program on this machine and supervise them (what torchrun/mpirun do), alone
// (launch_local_workers, launch_under_mpirun) or as one node of a multi-node job (launch_node_workers).
// Guarantees of launch_local_workers():
//  - Each worker is the executable (default: this one, /proc/self/exe) with argv_without_nproc (argv[0]
//    included) and the environment of the launcher plus RANK, WORLD_SIZE, LOCAL_RANK (= rank), MASTER_ADDR,
//    MASTER_PORT (a free loopback port unless given) and DDPX_JOB_TOKEN (random per launch). CUDA_VISIBLE_DEVICES
//    is left as it is: a worker picks its GPU from LOCAL_RANK among the visible ones (dist/gpu_selection.hpp).
//  - Output: every line a worker writes is passed on whole, prefixed "[rank k] ", to the launcher's stdout (from
//    the worker's stdout) or stderr (from its stderr); lines of different workers never interleave mid-line.
//  - Supervision: the first worker to exit non-zero or by a signal is reported on stderr as
//    "ddpx launch: rank 1 exited with status 3 first: <its last stderr line>"; the others get SIGTERM, then
//    SIGKILL after grace_period. SIGINT/SIGTERM sent to the launcher (Ctrl-C) are forwarded to every worker
//    (workers run in their own process groups, so the terminal's Ctrl-C reaches them once, through us).
//  - Workers never outlive the launcher: if it dies (SIGKILL, OOM, SIGPIPE from `| head`), the kernel sends each
//    worker SIGTERM (PR_SET_PDEATHSIG), so no orphan keeps its GPU or its peers' collectives waiting.
//  - Returns 0 when every worker exits 0; else the first failure's exit status (128 + signal if killed; 130 when
//    interrupted). Never exits the process itself. Not reentrant: one launch at a time per process.
// launch_under_mpirun() is the CPU backend's path: it runs `mpirun -np N --oversubscribe [--allow-run-as-root
// when uid is 0] <this executable> <args>` and returns mpirun's exit status (same signal forwarding, and SIGKILL
// to mpirun's process group when it has not exited grace_period after a forwarded signal; mpirun too
// gets SIGTERM if the launcher dies, and it stops its ranks). mpirun's environment is the launcher's without
// torchrun's RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE, which would otherwise override mpirun's own variables.
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include "dist/bootstrap.hpp"  // kWorkerMarker

namespace ddpx {

struct LaunchOptions {
  std::string executable;  // empty: this program
  std::string master_addr = "127.0.0.1";
  int master_port = 0;     // 0: pick a free port on master_addr
  std::string job_token;   // empty: a random one
  std::chrono::milliseconds grace_period{std::chrono::seconds(5)};
  int stdout_fd = 1;       // where prefixed worker lines go
  int stderr_fd = 2;
};

int launch_local_workers(int nproc, const std::vector<std::string>& argv_without_nproc,
                         const LaunchOptions& options = {});

int launch_under_mpirun(int nproc, const std::vector<std::string>& argv_without_nproc,
                        const LaunchOptions& options = {});

// One node of a multi-node job (`--nnodes N --node-rank R --master-addr A --master-port P`, torchrun's meanings).
// launch_node_workers() runs once per node; see node_launcher.cpp and docs/design.md ("Multi-node launcher"):
//  - Port layout: node 0's launcher serves the control channel on A:P; the workers' rendezvous (MASTER_PORT) is
//    A:P+1. Only A is bound, never all interfaces.
//  - Workers get RANK = R*G + local, WORLD_SIZE = N*G, LOCAL_RANK, LOCAL_WORLD_SIZE = G, MASTER_ADDR = A (as
//    resolved), MASTER_PORT = P+1 and one DDPX_JOB_TOKEN for the whole job: 128 random bits drawn by node 0's
//    launcher and sent to the others over the control channel.
//  - Bounded start: the other launchers join within join_timeout or every launcher fails naming the missing
//    node ranks (and node 0's address). Mismatched --nnodes or --nproc-per-node, or a node rank given twice, fail
//    on node 0 and on the node at fault with the same message naming both values.
//  - Bounded end: the first worker failure on any node (exit != 0 or a signal), a launcher interrupted, or a
//    launcher lost (connection closed, or silent past heartbeat_timeout) stops the workers on every node; every
//    launcher prints the same "ddpx launch: rank K on node R (address) ... first: <its last stderr line>" and
//    returns the same exit status (the failed rank's; 130 when interrupted; 1 when a launcher was lost).
struct NodeOptions {
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr;
  int master_port = 29500;
  std::chrono::milliseconds join_timeout{std::chrono::seconds(300)};
  std::chrono::milliseconds heartbeat_timeout{std::chrono::seconds(300)};
};

int launch_node_workers(int nproc_per_node, const NodeOptions& node, const std::vector<std::string>& argv,
                        const LaunchOptions& options = {});

}  // namespace ddpx
