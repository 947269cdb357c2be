// Loader thread count; see loader_workers.hpp.
#include "data/loader_workers.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace ddpx {

LoaderWorkerChoice choose_loader_workers(int requested, bool gpu_ranks, int usable_cpus, int ranks_on_node) {
  if (requested > 0) return {std::min(requested, 256), "--workers"};
  if (!gpu_ranks) return {2, "CPU ranks: 2"};
  const int cpus = std::max(usable_cpus, 1);
  const int ranks = std::max(ranks_on_node, 1);
  const int workers = std::clamp(cpus / ranks / 2, 1, 16);
  return {workers, fmt::format("{} CPU{} / {} rank{} on this node / 2{}", cpus, cpus == 1 ? "" : "s", ranks,
                               ranks == 1 ? "" : "s", cpus / ranks / 2 > 16 ? ", at most 16" : "")};
}

}  // namespace ddpx
