// Worker launch for --nproc-per-node; the process management itself lives in dist/launcher.
#include "cli/launch.hpp"

#include <cstdlib>

#include "core/error.hpp"

namespace ddpx::cli {

bool running_as_worker() {
  for (const char* var : {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (std::getenv(var)) return true;
  return false;
}

int launch_workers(int nproc, const TrainOptions&) {
  fail("--nproc-per-node {}: the launcher is not built into this ddpx yet", nproc);
}

}  // namespace ddpx::cli
