// BLAS thread policy and its application to OpenBLAS; see blas_threads.hpp.
#include "model/blas_threads.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <thread>

#include "core/error.hpp"

namespace ddpx {

BlasThreadChoice choose_blas_threads(int requested, int hardware_threads, int ranks_on_node, int usable_cpus,
                                     const std::function<std::optional<std::string>(const std::string&)>& env) {
  DDPX_REQUIRE(requested >= 0, "--cpu-threads must be >= 0 (0: the node's cores shared by its ranks), got {}",
               requested);
  if (requested > 0) return {requested, "--cpu-threads"};
  for (const char* name : {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"}) {
    std::optional<std::string> value = env(name);
    if (value && !value->empty()) return {0, fmt::format("{}={}", name, *value)};
  }
  const int hardware = std::max(hardware_threads, 1);
  const int ranks = std::max(ranks_on_node, 1);
  const int shared = std::max(hardware / ranks, 1);
  if (usable_cpus > 0 && usable_cpus < shared)
    return {usable_cpus, fmt::format("{} CPU{} in this rank's affinity mask", usable_cpus, usable_cpus == 1 ? "" : "s")};
  return {shared, fmt::format("{} hardware threads / {} rank{} on this node", hardware, ranks, ranks == 1 ? "" : "s")};
}

int usable_cpu_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  return static_cast<int>(std::thread::hardware_concurrency());
}

int apply_blas_threads(int threads) {
  using SetThreads = void (*)(int);
  using GetThreads = int (*)();
  auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  auto get = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (!get) return 0;
  if (threads > 0 && set) set(threads);
  return get();
}

}  // namespace ddpx
