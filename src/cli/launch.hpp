// Starting a job's workers from `ddpx train --nproc-per-node N`.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "train/train_options.hpp"

namespace ddpx::cli {
// --nnodes, --node-rank, --master-addr, --master-port, --join-timeout (torchrun's names and meanings; torchrun's
// underscore spellings --node_rank, --master_addr, --master_port and --nproc_per_node are accepted too).
struct NodeFlags {
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr;
  int master_port = 29500;
  double join_timeout_s = 300;
  std::vector<CLI::Option*> given_only_with_nnodes;  // --node-rank, --master-addr, --master-port, --join-timeout
};
// Adds the node flags to `cmd` in `group` (the command declares "--nproc-per-node,--nproc_per_node" itself).
void add_node_flags(CLI::App* cmd, NodeFlags& flags, const std::string& group);

// Keeps argv so launch_workers can re-run the same command line.
void remember_command_line(int argc, char** argv);
// The argv remember_command_line kept (empty before it ran).
const std::vector<std::string>& remembered_command_line();
// True when this process was started as one rank of a job of 2+ ranks (by ddpx, mpirun, srun or torchrun).
bool running_as_worker();
// Whether this process should start `nproc` workers itself (--nproc-per-node N > 1, not already a rank). A process
// that is already one rank of a job and was also given --nproc-per-node N > 1 is an error naming both: the job
// would otherwise silently run with the outer launcher's ranks only.
// --nnodes N > 1 starts workers too; it is refused inside another launcher's world of 2+ ranks and under any MPI
// launcher (mpirun, srun --mpi), naming both; the other node flags without --nnodes > 1 are an error.
bool start_workers_here(int nproc, const NodeFlags& nodes = {});
// For commands that start the ranks of every trial themselves (bench, tune): an error naming the command and the
// launcher when this process is one rank of a job of 2+ (each rank would run every trial, colliding with the
// others); nothing otherwise (a single process, an sbatch script, `srun -n 1`).
void require_single_process(const std::string& command);
// "" when N CPU ranks fit the node's hardware threads, else a one-line note that they will time-share the cores
// (correct, but each rank runs slower than alone; the numbers measure the oversubscribed machine).
std::string cpu_oversubscription_note(int nproc, unsigned hardware_threads);
// Re-runs this command line (without the launch flags) as N workers, supervises them and returns the job's exit
// status. How the local ranks start is the backend registry's (dist/backend_registry.hpp, local_launch): on CUDA N
// processes of ddpx's own, one per GPU; on the CPU the backend's cpu_launch (gloo: N processes of ddpx's own;
// mpi, and auto: under mpirun). With --nnodes > 1: this node's share of the job through launch/launcher's
// launch_node_workers, the heartbeat timeout being --comm-timeout; a CPU backend whose entry has an
// nnodes_refusal (mpi: mpirun spans nodes on its own) is refused with it.
// What launch_workers needs of the command it re-runs (train fills it from its options; allreduce from its own).
struct LaunchTarget {
  Device device = Device::cpu;
  BackendChoice backend;                 // --backend (auto for commands without one)
  double comm_timeout_s = 300;           // --nnodes: the heartbeat timeout between the nodes
};
LaunchTarget launch_target(const TrainOptions& options);
int launch_workers(int nproc, const LaunchTarget& target, const NodeFlags& nodes = {});
}  // namespace ddpx::cli
