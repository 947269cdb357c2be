// Bootstrap: who am I in the job (rank, world size, local rank, launcher).
// Guarantees:
//  - detect_world() reads, in this order of precedence: torchrun style (RANK, WORLD_SIZE, LOCAL_RANK,
//    MASTER_ADDR, MASTER_PORT; what ddpx's own launcher sets), Open MPI (OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK),
//    PMI (PMI_RANK/PMI_SIZE, MPI_LOCALRANKID), Slurm (SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID); none of them:
//    a single process (rank 0 of 1). The ranks on this node (local_world_size) come from the same launcher:
//    LOCAL_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS or SLURM_NTASKS_PER_NODE; where it does not
//    say (or says something unreadable), the whole world is assumed to share the node; the value is clamped into
//    [local_rank + 1, world_size], since it is only a hint for CPU threads (Slurm's is the requested per-node
//    count, which a smaller job step inherits). torchrun's variables win because a launcher inside an mpirun/Slurm
//    allocation sets them per worker. A malformed or inconsistent rank variable is a ddpx::Error naming it.
//    What MPI launchers and Slurm say beyond that (whether MPI must come up; an sbatch script is one process; the
//    step's ranks per node; a master address and port derived under Slurm; conflicting variables) is completed
//    by dist/job_environment.hpp.
//  - The job token lets the TCP rendezvous reject processes of another job: DDPX_JOB_TOKEN (ddpx's launcher sets a
//    random one), else under torchrun its TORCHELASTIC_RUN_ID and restart count (unless the run id is "none"),
//    else empty. Without one the rendezvous runs only on a loopback MASTER_ADDR (see tcp_rendezvous.hpp): a token
//    derived from public facts (the port, the world size) would keep out nobody.
//  - Which backends exist, what each needs, the rule for --backend auto and make_communicator() are
//    dist/backend_registry.hpp's.
#pragma once
#include <optional>
#include <string>

#include "dist/world_info.hpp"

namespace ddpx {

// Set to 1 in every worker ddpx's launchers (launch/launcher.hpp) start: the worker re-runs the launcher's command
// line, so a --nproc-per-node it still sees (from a --config file) must not be taken as a request to launch again.
inline constexpr const char* kWorkerMarker = "DDPX_WORKER";

// getenv(), as an EnvLookup.
EnvLookup process_environment();

WorldInfo detect_world(const EnvLookup& env = process_environment());

// "Was this process started as a rank by a launcher above?", answered with what the messages that refuse to start
// the ranks a second time name: "rank 1 of 2 started by torchrun". The one place outside DistJob that reads the
// world (the CLI asks it before any job opens: the launch guards of cli/launch.hpp, the line only rank 0 prints).
struct LaunchedRank {
  int rank = 0;
  int world_size = 2;
  std::string launcher;  // launcher_name(): "torchrun", "Open MPI", "PMI", "Slurm"
};
// This process's rank when a launcher above started it as one rank of a job of two or more; nullopt for a single
// process. A launcher's variables that describe a world of one (an sbatch script's single task, a stray RANK=0
// WORLD_SIZE=1) do not count. Malformed rank variables are detect_world()'s errors.
std::optional<LaunchedRank> launched_rank(const EnvLookup& env = process_environment());

// launched_rank().has_value().
bool launched_as_worker(const EnvLookup& env = process_environment());

}  // namespace ddpx
