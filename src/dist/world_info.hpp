// WorldInfo: who this process is in the job (rank, world size, local rank, launcher, rendezvous), as
// detect_world() (dist/bootstrap.hpp) reads it from the environment and complete_job_environment()
// (dist/job_environment.hpp) completes it. Its own header so that the two fill it without including each other.
// Plain data, and the EnvLookup both read the environment through.
#pragma once
#include <functional>
#include <optional>
#include <string>

namespace ddpx {

// Who set the rank variables detect_world() read (the first of them found, in bootstrap.hpp's order).
enum class LauncherKind { none, torchrun, open_mpi, pmi, slurm };
// How errors and reports name it: "none", "torchrun", "Open MPI", "PMI", "Slurm".
const char* launcher_name(LauncherKind kind);

struct WorldInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;       // ranks on this node (CPU threads per rank are shared out by it)
  LauncherKind launcher = LauncherKind::none;
  std::string master_addr;        // empty unless set
  int master_port = 0;            // 0 unless set
  std::string job_token;
  bool mpi_launched = false;  // an MPI launcher started this process: bring up MPI (see job_environment.hpp)
  std::string master_origin;  // where a derived MASTER_ADDR/MASTER_PORT came from; empty when exported
  int ranks_per_gpu = 0;      // --ranks-per-gpu of the command (0: not given); set by the command, not the env
};

using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

}  // namespace ddpx
