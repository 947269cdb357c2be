// Worker launch for --nproc-per-node; the process management itself lives in dist/launcher.
#include "cli/launch.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "dist/bootstrap.hpp"
#include "dist/launcher.hpp"

namespace ddpx::cli {
namespace {
std::vector<std::string>& command_line() {
  static std::vector<std::string> args;
  return args;
}
}  // namespace

void remember_command_line(int argc, char** argv) { command_line().assign(argv, argv + argc); }

bool running_as_worker() { return launched_as_worker(); }

bool start_workers_here(int nproc) {
  if (nproc <= 1) return false;
  if (!running_as_worker()) return true;
  if (const char* marker = std::getenv(kWorkerMarker); marker && std::string(marker) == "1") return false;
  const WorldInfo world = detect_world();
  fail("--nproc-per-node {}: this process is already rank {} of {} started by {}; start the ranks one way: either "
       "`ddpx ... --nproc-per-node N` on its own, or {} without --nproc-per-node",
       nproc, world.rank, world.world_size, world.launcher, world.launcher);
}

std::string cpu_oversubscription_note(int nproc, unsigned hardware_threads) {
  if (hardware_threads == 0 || static_cast<unsigned>(nproc) <= hardware_threads) return "";
  return fmt::format("ddpx launch: note: {} CPU ranks on {} hardware thread(s): the ranks time-share the cores, so "
                     "each runs slower than alone (results are correct; throughput is that of an oversubscribed "
                     "machine)", nproc, hardware_threads);
}

int launch_workers(int nproc, const TrainOptions& options) {
  // The workers run the same command line without --nproc-per-node (both "--nproc-per-node N" and "=N" forms).
  std::vector<std::string> args;
  const auto& all = command_line();
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i] == "--nproc-per-node") {
      ++i;
      continue;
    }
    if (all[i].rfind("--nproc-per-node=", 0) == 0) continue;
    args.push_back(all[i]);
  }
  DDPX_REQUIRE(nproc <= 1024, "--nproc-per-node {} is not a plausible number of local workers", nproc);
  if (options.device == "cuda") return launch_local_workers(nproc, args);
  const std::string note = cpu_oversubscription_note(nproc, std::thread::hardware_concurrency());
  if (!note.empty()) fmt::print(stderr, "{}\n", note);
  // The Gloo CPU backend needs no MPI: N processes of our own, like GPUs; the MPI backend runs under mpirun.
  if (options.backend == "gloo") return launch_local_workers(nproc, args);
  return launch_under_mpirun(nproc, args);
}

}  // namespace ddpx::cli
