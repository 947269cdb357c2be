// Starting a job's workers from `ddpx train --nproc-per-node N`.
#pragma once
#include <string>

#include "train/train_options.hpp"

namespace ddpx::cli {
// Keeps argv so launch_workers can re-run the same command line.
void remember_command_line(int argc, char** argv);
// True when this process was started as one rank of a job of 2+ ranks (by ddpx, mpirun, srun or torchrun).
bool running_as_worker();
// Whether this process should start `nproc` workers itself (--nproc-per-node N > 1, not already a rank). A process
// that is already one rank of a job and was also given --nproc-per-node N > 1 is an error naming both: the job
// would otherwise silently run with the outer launcher's ranks only.
bool start_workers_here(int nproc);
// "" when N CPU ranks fit the node's hardware threads, else a one-line note that they will time-share the cores
// (correct, but each rank runs slower than alone; the numbers measure the oversubscribed machine).
std::string cpu_oversubscription_note(int nproc, unsigned hardware_threads);
// Re-runs this command line as N workers (CUDA or --backend gloo: N processes, one per GPU on CUDA; other CPU
// runs: under mpirun), supervises them and
// returns the job's exit status.
int launch_workers(int nproc, const TrainOptions& options);
}  // namespace ddpx::cli
