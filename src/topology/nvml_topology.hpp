// Probing the GPU topology through NVML, loaded at run time with dlopen (the build needs no NVML header or
// library; a machine without the NVIDIA driver gets a message, never a crash or a link error).
// Guarantees: probe_topology() never throws for a missing or failing NVML: it returns no table and a message
// saying why ("NVML not found (libnvidia-ml.so.1): no NVIDIA driver on this machine", or the failing NVML call
// and its error string). A returned table has passed TopologyTable::validate(). NVML is initialized and shut
// down inside the call; the library handle is closed before returning. Not thread-safe against other NVML users
// calling nvmlShutdown concurrently (NVML reference-counts init/shutdown, so ordinary use is fine).
#pragma once
#include <optional>
#include <string>

#include "topology/topology.hpp"

namespace ddpx {

struct TopologyProbe {
  std::optional<TopologyTable> table;  // present when NVML answered
  std::string message;                 // why there is no table; empty on success
};

// Links: NV<k> when GPUs i and j share k active NVLinks, or both reach NVSwitches (k = the smaller number of
// active links) and NVML reports NVLink P2P between them; otherwise the PCIe common ancestor (PIX, PXB, PHB,
// NODE, SYS). NUMA Affinity: nvmlDeviceGetMemoryAffinity (node scope), else the PCI device's numa_node in sysfs
// (pci_sysfs.hpp); GPU NUMA ID: nvmlDeviceGetNumaNodeId, N/A (-1) when NVML does not support it for the GPU.
// NICs are not probed here (nic_topology.hpp adds them).
TopologyProbe probe_topology(const std::string& library = "libnvidia-ml.so.1");

}  // namespace ddpx
