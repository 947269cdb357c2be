// TopologyTable: the GPU and NIC link matrix of one machine, as `nvidia-smi topo -m` shows it, plus CPU affinity,
// NUMA affinity and GPU NUMA ID in nvidia-smi's meanings.
// Guarantees: a table that passed validate() is square (links[i].size() == gpus.size()), "X" exactly on the
// diagonal, symmetric, and every link is one of NV<count>, PIX, PXB, PHB, NODE, SYS; gpu_nic_links is
// gpus x nics and nic_links nics x nics (symmetric, "X" on the diagonal), both PCIe levels only (no NV#).
// Filling it is the probers' job (nvml_topology.hpp, nic_topology.hpp); this file only holds, checks, converts
// and prints it. JSON from before NICs and the two NUMA columns existed still loads: its "numa_node" (the GPU's
// PCI device's numa_node) is read as the NUMA affinity, and it has no NICs.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace ddpx {

struct GpuTopology {
  int index = 0;             // NVML index (CUDA_VISIBLE_DEVICES does not renumber it)
  std::string name;          // "NVIDIA H200"
  std::string pci_bus_id;    // "00000000:19:00.0"
  std::string cpu_affinity;  // "0-47,96-143", "" when unknown
  // nvidia-smi's "NUMA Affinity": the NUMA node(s) of the memory and CPUs near the GPU, "0" or "0-1"; "" unknown.
  std::string numa_affinity;
  // nvidia-smi's "GPU NUMA ID": the NUMA node of the GPU's own memory when the OS maps it as a node (coherent
  // GPU memory, e.g. Grace Hopper); -1 (printed N/A) on most machines.
  int gpu_numa_id = -1;
  bool operator==(const GpuTopology&) const = default;
};

// A network device backed by a PCI function: an RDMA device (/sys/class/infiniband, "mlx5_0") and/or the network
// interfaces on the same function ("ib0", "enp25s0np0").
struct NicTopology {
  std::string name;                   // the RDMA device's name when there is one (what NCCL_IB_HCA names), else the interface
  std::vector<std::string> netdevs;   // network interfaces on this PCI function, sorted
  std::string pci_bus_id;             // "0000:19:00.0"
  std::string numa_affinity;          // as for GPUs; "" unknown
  bool operator==(const NicTopology&) const = default;
};

struct TopologyTable {
  std::vector<GpuTopology> gpus;
  std::vector<std::vector<std::string>> links;  // links[i][j]
  std::vector<NicTopology> nics;                         // empty when none found (or recorded before NICs)
  std::vector<std::vector<std::string>> gpu_nic_links;  // gpu_nic_links[gpu][nic]
  std::vector<std::vector<std::string>> nic_links;      // nic_links[nic][nic]
  std::string driver_version;                   // "" when unknown
  bool operator==(const TopologyTable&) const = default;

  // Throws ddpx::Error naming the pair and the value that breaks the guarantees above.
  void validate() const;
};

// True for NV<count> (count >= 1), PIX, PXB, PHB, NODE, SYS.
bool is_link_name(std::string_view link);
// The number of NVLinks in "NV18" (18); 0 for every other link.
int nvlink_count(std::string_view link);

// The matrix with GPU and NIC columns (GPU rows, then NIC rows), CPU Affinity, NUMA Affinity and GPU NUMA ID
// columns, a list of GPU names and bus ids, the legend and the NIC legend ("NIC0: mlx5_0 ..."), in nvidia-smi's
// words. With no GPUs: "No NVIDIA GPU found." and, when NICs are known, their matrix and legend.
std::string format_topology(const TopologyTable& table);

void to_json(nlohmann::json& j, const GpuTopology& value);
void from_json(const nlohmann::json& j, GpuTopology& value);
void to_json(nlohmann::json& j, const NicTopology& value);
void from_json(const nlohmann::json& j, NicTopology& value);
void to_json(nlohmann::json& j, const TopologyTable& value);
void from_json(const nlohmann::json& j, TopologyTable& value);  // validates
TopologyTable load_topology(const std::string& path);            // errors name the file

}  // namespace ddpx
