// Topology table checks, JSON and printing (see topology.hpp).
#include "profile/topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <fstream>

#include "core/error.hpp"
#include "core/json_parse.hpp"
#include "profile/json_fields.hpp"

namespace ddpx {

using nlohmann::json;

int nvlink_count(std::string_view link) {
  if (link.size() < 3 || link.substr(0, 2) != "NV") return 0;
  int count = 0;
  auto [end, ec] = std::from_chars(link.data() + 2, link.data() + link.size(), count);
  if (ec != std::errc() || end != link.data() + link.size()) return 0;
  return count;
}

bool is_link_name(std::string_view link) {
  return nvlink_count(link) > 0 || link == "PIX" || link == "PXB" || link == "PHB" || link == "NODE" ||
         link == "SYS";
}

void TopologyTable::validate() const {
  const size_t n = gpus.size();
  DDPX_REQUIRE(links.size() == n, "topology: {} GPUs but {} rows in the link matrix", n, links.size());
  for (size_t i = 0; i < n; ++i) {
    DDPX_REQUIRE(links[i].size() == n, "topology: row GPU{} has {} entries, expected {}", i, links[i].size(), n);
    for (size_t j = 0; j < n; ++j) {
      const std::string& link = links[i][j];
      if (i == j) {
        DDPX_REQUIRE(link == "X", "topology: GPU{} to itself must be \"X\", got \"{}\"", i, link);
        continue;
      }
      DDPX_REQUIRE(is_link_name(link),
                   "topology: GPU{} to GPU{} is \"{}\"; expected NV<count>, PIX, PXB, PHB, NODE or SYS", i, j, link);
      DDPX_REQUIRE(link == links[j][i], "topology: GPU{} to GPU{} is \"{}\" but GPU{} to GPU{} is \"{}\"", i, j, link,
                   j, i, links[j][i]);
    }
  }
}

std::string format_topology(const TopologyTable& table) {
  const size_t n = table.gpus.size();
  if (n == 0) return "No NVIDIA GPU found.\n";
  std::string out;
  out += fmt::format("{:8}", "");
  for (size_t j = 0; j < n; ++j) out += fmt::format("{:<8}", fmt::format("GPU{}", j));
  out += fmt::format("{:<16}{}\n", "CPU Affinity", "NUMA Affinity");
  for (size_t i = 0; i < n; ++i) {
    out += fmt::format("{:<8}", fmt::format("GPU{}", i));
    for (size_t j = 0; j < n; ++j) out += fmt::format("{:<8}", i == j ? " X" : table.links[i][j]);
    const GpuTopology& gpu = table.gpus[i];
    out += fmt::format("{:<16}{}\n", gpu.cpu_affinity.empty() ? "N/A" : gpu.cpu_affinity,
                       gpu.numa_node < 0 ? std::string("N/A") : std::to_string(gpu.numa_node));
  }
  out += "\n";
  for (const GpuTopology& gpu : table.gpus)
    out += fmt::format("GPU{}: {} ({})\n", gpu.index, gpu.name, gpu.pci_bus_id.empty() ? "bus id unknown" : gpu.pci_bus_id);
  if (!table.driver_version.empty()) out += fmt::format("Driver: {}\n", table.driver_version);
  out +=
      "\nLegend:\n\n"
      "  X    = Self\n"
      "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n"
      "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node\n"
      "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
      "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)\n"
      "  PIX  = Connection traversing at most a single PCIe bridge\n"
      "  NV#  = Connection traversing a bonded set of # NVLinks\n";
  return out;
}

void to_json(json& j, const GpuTopology& v) {
  j = json{{"index", v.index},
           {"name", v.name},
           {"pci_bus_id", v.pci_bus_id},
           {"cpu_affinity", v.cpu_affinity},
           {"numa_node", v.numa_node}};
}

void from_json(const json& j, GpuTopology& v) {
  json_fields::require(j, "topology GPU", "index", v.index);
  json_fields::require(j, "topology GPU", "name", v.name);
  json_fields::optional(j, "topology GPU", "pci_bus_id", v.pci_bus_id);
  json_fields::optional(j, "topology GPU", "cpu_affinity", v.cpu_affinity);
  json_fields::optional(j, "topology GPU", "numa_node", v.numa_node);
}

void to_json(json& j, const TopologyTable& v) {
  j = json{{"gpus", v.gpus}, {"links", v.links}, {"driver_version", v.driver_version}};
}

void from_json(const json& j, TopologyTable& v) {
  json_fields::require(j, "topology", "gpus", v.gpus);
  json_fields::require(j, "topology", "links", v.links);
  json_fields::optional(j, "topology", "driver_version", v.driver_version);
  v.validate();
}

TopologyTable load_topology(const std::string& path) {
  std::ifstream in(path);
  DDPX_REQUIRE(in.good(), "cannot open topology '{}': write one with `ddpx topo --json {}`", path, path);
  try {
    return parse_json(in, "the file").get<TopologyTable>();
  } catch (const json::exception& e) {
    fail("topology '{}' is not valid JSON: {}", path, e.what());
  } catch (const Error& e) {
    fail("topology '{}': {}", path, e.what());
  }
}

}  // namespace ddpx
