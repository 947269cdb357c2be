// What the CUDA runtime shows this process: the GPUs (after CUDA_VISIBLE_DEVICES), their PCI bus ids and peer
// access, and how CUDA's device numbers map onto NVML's (which CUDA_VISIBLE_DEVICES does not renumber).
// Guarantees: never throws for a missing driver or GPU and never aborts: a build without CUDA, or a machine
// without a usable driver, sees 0 GPUs and empty lists. Calling these initializes the CUDA runtime (no device
// memory is allocated).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "topology/topology.hpp"

namespace ddpx::cli {

int visible_gpu_count();
// "devices: cpu, cuda (2 GPUs)" when this binary has the CUDA engine and sees a GPU; otherwise "devices: cpu
// (built without CUDA)" or "devices: cpu (built with CUDA; no GPU visible)". The first form names --device cuda.
std::string devices_line();
// PCI bus id of every visible GPU in CUDA order ("0000:19:00.0"); "" where the runtime does not say.
std::vector<std::string> visible_gpu_bus_ids();
// can[i][j]: cudaDeviceCanAccessPeer(i, j) in CUDA order (the diagonal is true).
std::vector<std::vector<bool>> visible_gpu_peer_access();

// True when two PCI bus ids name the same device: "0000:19:00.0" (CUDA) and "00000000:19:00.0" (NVML) match;
// case and the width of the domain do not matter.
bool same_pci_device(std::string_view a, std::string_view b);
// Position in table.gpus of the GPU with this bus id; -1 when none has it.
int topology_index_of(const TopologyTable& table, std::string_view bus_id);

}  // namespace ddpx::cli
