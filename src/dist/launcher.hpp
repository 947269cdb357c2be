// Launcher: start N workers of this program on this machine and supervise them (what torchrun/mpirun do).
// Guarantees of launch_local_workers():
//  - Each worker is the executable (default: this one, /proc/self/exe) with argv_without_nproc (argv[0]
//    included) and the environment of the launcher plus RANK, WORLD_SIZE, LOCAL_RANK (= rank), MASTER_ADDR,
//    MASTER_PORT (a free loopback port unless given) and DDPX_JOB_TOKEN (random per launch). CUDA_VISIBLE_DEVICES
//    is left as it is: a worker picks device = LOCAL_RANK.
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

namespace ddpx {

// Set to 1 in every worker either launcher starts: the worker re-runs the launcher's command line, so a
// --nproc-per-node it still sees (from a --config file) must not be taken as a request to launch again.
inline constexpr const char* kWorkerMarker = "DDPX_WORKER";

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

// A TCP port on `address` that was free a moment ago (bind to port 0, read it back, close).
int find_free_port(const std::string& address = "127.0.0.1");

}  // namespace ddpx
