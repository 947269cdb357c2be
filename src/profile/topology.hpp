// TopologyTable: the GPU link matrix of one machine, as `nvidia-smi topo -m` shows it, plus CPU/NUMA affinity.
// Guarantees: a table that passed validate() is square (links[i].size() == gpus.size()), "X" exactly on the
// diagonal, symmetric, and every link is one of NV<count>, PIX, PXB, PHB, NODE, SYS. Filling it is the prober's
// job (nvml_topology.hpp); this file only holds, checks, converts and prints it.
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
  int numa_node = -1;        // -1 when unknown
  bool operator==(const GpuTopology&) const = default;
};

struct TopologyTable {
  std::vector<GpuTopology> gpus;
  std::vector<std::vector<std::string>> links;  // links[i][j]
  std::string driver_version;                   // "" when unknown
  bool operator==(const TopologyTable&) const = default;

  // Throws ddpx::Error naming the pair and the value that breaks the guarantees above.
  void validate() const;
};

// True for NV<count> (count >= 1), PIX, PXB, PHB, NODE, SYS.
bool is_link_name(std::string_view link);
// The number of NVLinks in "NV18" (18); 0 for every other link.
int nvlink_count(std::string_view link);

// The matrix with GPU columns, CPU Affinity and NUMA Affinity columns, a list of GPU names and bus ids, and the
// legend, in nvidia-smi's words.
std::string format_topology(const TopologyTable& table);

void to_json(nlohmann::json& j, const GpuTopology& value);
void from_json(const nlohmann::json& j, GpuTopology& value);
void to_json(nlohmann::json& j, const TopologyTable& value);
void from_json(const nlohmann::json& j, TopologyTable& value);  // validates
TopologyTable load_topology(const std::string& path);            // errors name the file

}  // namespace ddpx
