// Loader-thread placement; see loader_affinity.hpp.
#include "data/loader_affinity.hpp"

#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>

#ifdef DDPX_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace ddpx {
namespace {

// "0-3,8,10-11" (the kernel's cpulist format) for the start-up line.
std::string core_ranges(const std::vector<int>& cores) {
  std::string out;
  for (size_t i = 0; i < cores.size();) {
    size_t j = i;
    while (j + 1 < cores.size() && cores[j + 1] == cores[j] + 1) ++j;
    out += fmt::format("{}{}", out.empty() ? "" : ",", j == i ? fmt::format("{}", cores[i])
                                                                : fmt::format("{}-{}", cores[i], cores[j]));
    i = j + 1;
  }
  return out;
}

}  // namespace

LoaderCores choose_loader_cores(const std::vector<int>& allowed, const std::vector<int>& near_gpu,
                                const std::string& gpu) {
  if (gpu.empty()) return {{}, "not pinned (no GPU)"};
  if (near_gpu.empty())
    return {{}, fmt::format("not pinned: the cores near GPU {} are unknown{}", gpu,
                            hwloc_available() ? "" : " (built without hwloc: install libhwloc-dev and rebuild)")};
  std::vector<int> chosen;
  for (const int core : near_gpu)
    if (std::find(allowed.begin(), allowed.end(), core) != allowed.end()) chosen.push_back(core);
  std::sort(chosen.begin(), chosen.end());
  chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
  if (chosen.empty())
    return {{}, fmt::format("not pinned: none of the cores near GPU {} ({}) is in this process's mask ({})", gpu,
                            core_ranges(near_gpu), core_ranges(allowed))};
  return {chosen, fmt::format("pinned to {} core{} near GPU {} ({})", chosen.size(), chosen.size() == 1 ? "" : "s",
                              gpu, core_ranges(chosen))};
}

std::vector<int> allowed_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cores;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cores;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) cores.push_back(cpu);
  return cores;
}

bool hwloc_available() {
#ifdef DDPX_HAVE_HWLOC
  return true;
#else
  return false;
#endif
}

std::vector<int> gpu_local_cores(const std::string& pci_bus_id) {
  std::vector<int> cores;
#ifdef DDPX_HAVE_HWLOC
  if (pci_bus_id.empty()) return cores;
  hwloc_topology_t topology = nullptr;
  if (hwloc_topology_init(&topology) != 0) return cores;
  // PCI devices are left out of hwloc's topology unless asked for; "important" keeps GPUs and their bridges.
  if (hwloc_topology_set_io_types_filter(topology, HWLOC_TYPE_FILTER_KEEP_IMPORTANT) == 0 &&
      hwloc_topology_load(topology) == 0) {
    const hwloc_obj_t device = hwloc_get_pcidev_by_busidstring(topology, pci_bus_id.c_str());
    const hwloc_obj_t near = device != nullptr ? hwloc_get_non_io_ancestor_obj(topology, device) : nullptr;
    if (near != nullptr && near->cpuset != nullptr) {
      for (int cpu = hwloc_bitmap_first(near->cpuset); cpu >= 0; cpu = hwloc_bitmap_next(near->cpuset, cpu))
        cores.push_back(cpu);
    }
  }
  hwloc_topology_destroy(topology);
#else
  (void)pci_bus_id;
#endif
  return cores;
}

void pin_this_thread(const std::vector<int>& cores) {
  if (cores.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (const int core : cores)
    if (core >= 0 && core < CPU_SETSIZE) CPU_SET(core, &set);
  (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);  // refused: the thread runs unpinned
}

}  // namespace ddpx
