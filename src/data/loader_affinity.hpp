// Loader threads near their GPU (--pin-loaders near-gpu): the cores a rank's loader threads run on.
// Guarantees:
//  - choose_loader_cores() is pure: the cores near the GPU that this process may use (its affinity mask) when that
//    set is known and not empty; otherwise none, and the loader threads are not pinned (a CPU run, hwloc missing,
//    an unknown GPU, or a GPU whose near cores this process may not use: the threads keep the process's mask).
//    The reason comes with the choice, for the start-up line.
//  - gpu_local_cores(bus id) asks hwloc (Debian libhwloc-dev; without it the answer is unknown) for the cores of the
//    nearest non-I/O ancestor of the GPU's PCI device (its NUMA node or package), as OS CPU numbers. It never
//    throws: an unknown bus id, a topology hwloc cannot read, or a build without hwloc answer empty.
//  - pin_this_thread(cores) sets the calling thread's CPU affinity to `cores`; empty leaves it as it is, and a
//    refusal (a container's seccomp policy, cores offline since) is ignored: the thread then runs where the OS puts
//    it, as without pinning.
#pragma once
#include <string>
#include <vector>

namespace ddpx {

struct LoaderCores {
  std::vector<int> cores;  // ascending; empty: no pinning
  std::string source;      // "pinned to 4 cores near GPU 0000:19:00.0", "not pinned: ..."
};

LoaderCores choose_loader_cores(const std::vector<int>& allowed, const std::vector<int>& near_gpu,
                                const std::string& gpu);
std::vector<int> allowed_cores();  // this process's affinity mask, ascending
std::vector<int> gpu_local_cores(const std::string& pci_bus_id);
bool hwloc_available();  // built with hwloc
void pin_this_thread(const std::vector<int>& cores);

}  // namespace ddpx
