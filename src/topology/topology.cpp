// Topology table checks, JSON and printing (see topology.hpp).
#include "topology/topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <sstream>
#include <tuple>

#include "core/error.hpp"
#include "core/json_parse.hpp"
#include "io/posix_file.hpp"
#include "report/json_fields.hpp"

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

namespace {

bool is_pcie_link_name(std::string_view link) {
  return link == "PIX" || link == "PXB" || link == "PHB" || link == "NODE" || link == "SYS";
}

std::string na_if_empty(const std::string& value) { return value.empty() ? "N/A" : value; }

// A square, symmetric link matrix between `n` devices named `kind` ("GPU", "NIC"), "X" on its diagonal and a link
// that `is_name` accepts elsewhere (`expected` lists those in the refusal); `matrix` names it in the row count's.
void validate_link_matrix(const std::vector<std::vector<std::string>>& links, size_t n, const char* kind,
                          const char* matrix, bool (*is_name)(std::string_view), const char* expected) {
  DDPX_REQUIRE(links.size() == n, "topology: {} {}s but {} rows in the {} matrix", n, kind, links.size(), matrix);
  for (size_t i = 0; i < n; ++i) {
    DDPX_REQUIRE(links[i].size() == n, "topology: row {}{} has {} entries, expected {}", kind, i, links[i].size(), n);
    for (size_t j = 0; j < n; ++j) {
      const std::string& link = links[i][j];
      if (i == j) {
        DDPX_REQUIRE(link == "X", "topology: {}{} to itself must be \"X\", got \"{}\"", kind, i, link);
        continue;
      }
      DDPX_REQUIRE(is_name(link), "topology: {}{} to {}{} is \"{}\"; expected {}", kind, i, kind, j, link, expected);
      DDPX_REQUIRE(link == links[j][i], "topology: {}{} to {}{} is \"{}\" but {}{} to {}{} is \"{}\"", kind, i, kind,
                   j, link, kind, j, kind, i, links[j][i]);
    }
  }
}

}  // namespace

void TopologyTable::validate() const {
  const size_t n = gpus.size();
  const size_t m = nics.size();
  if (m == 0) {
    DDPX_REQUIRE(std::all_of(gpu_nic_links.begin(), gpu_nic_links.end(), [](const auto& row) { return row.empty(); }),
                 "topology: GPU-NIC links given but no NICs");
  } else {
    DDPX_REQUIRE(gpu_nic_links.size() == n, "topology: {} GPUs but {} rows in the GPU-NIC matrix", n,
                 gpu_nic_links.size());
  }
  for (size_t i = 0; m > 0 && i < n; ++i) {
    DDPX_REQUIRE(gpu_nic_links[i].size() == m, "topology: GPU{} has {} NIC links, expected {}", i,
                 gpu_nic_links[i].size(), m);
    for (size_t k = 0; k < m; ++k)
      DDPX_REQUIRE(is_pcie_link_name(gpu_nic_links[i][k]),
                   "topology: GPU{} to NIC{} is \"{}\"; expected PIX, PXB, PHB, NODE or SYS", i, k, gpu_nic_links[i][k]);
  }
  validate_link_matrix(nic_links, m, "NIC", "NIC", &is_pcie_link_name, "PIX, PXB, PHB, NODE or SYS");
  validate_link_matrix(links, n, "GPU", "link", &is_link_name, "NV<count>, PIX, PXB, PHB, NODE or SYS");
}

std::string format_topology(const TopologyTable& table) {
  const size_t n = table.gpus.size();
  const size_t m = table.nics.size();
  std::string out;
  if (n == 0) out += "No NVIDIA GPU found.\n";
  if (n == 0 && m == 0) return out;
  if (n == 0) out += "\n";
  out += fmt::format("{:8}", "");
  for (size_t j = 0; j < n; ++j) out += fmt::format("{:<8}", fmt::format("GPU{}", j));
  for (size_t k = 0; k < m; ++k) out += fmt::format("{:<8}", fmt::format("NIC{}", k));
  out += fmt::format("{:<16}{:<16}{}\n", "CPU Affinity", "NUMA Affinity", "GPU NUMA ID");
  for (size_t i = 0; i < n; ++i) {
    out += fmt::format("{:<8}", fmt::format("GPU{}", i));
    for (size_t j = 0; j < n; ++j) out += fmt::format("{:<8}", i == j ? " X" : table.links[i][j]);
    for (size_t k = 0; k < m; ++k) out += fmt::format("{:<8}", table.gpu_nic_links[i][k]);
    const GpuTopology& gpu = table.gpus[i];
    out += fmt::format("{:<16}{:<16}{}\n", na_if_empty(gpu.cpu_affinity), na_if_empty(gpu.numa_affinity),
                       gpu.gpu_numa_id < 0 ? std::string("N/A") : std::to_string(gpu.gpu_numa_id));
  }
  for (size_t k = 0; k < m; ++k) {
    std::string row = fmt::format("{:<8}", fmt::format("NIC{}", k));
    for (size_t i = 0; i < n; ++i) row += fmt::format("{:<8}", table.gpu_nic_links[i][k]);
    for (size_t l = 0; l < m; ++l) row += fmt::format("{:<8}", k == l ? " X" : table.nic_links[k][l]);
    while (!row.empty() && row.back() == ' ') row.pop_back();
    out += row + "\n";
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
  if (m > 0) {
    out += "\nNIC Legend:\n\n";
    for (size_t k = 0; k < m; ++k) {
      const NicTopology& nic = table.nics[k];
      std::string netdevs;
      for (const std::string& netdev : nic.netdevs) netdevs += (netdevs.empty() ? "" : ",") + netdev;
      const bool own_netdev = nic.netdevs.size() == 1 && nic.netdevs[0] == nic.name;
      out += fmt::format("  NIC{}: {} ({}{}, NUMA {})\n", k, nic.name,
                         own_netdev ? "" : netdevs.empty() ? "no network interface, " : "net " + netdevs + ", ",
                         nic.pci_bus_id, na_if_empty(nic.numa_affinity));
    }
  }
  return out;
}

void to_json(json& j, const GpuTopology& v) {
  j = json{{"index", v.index},
           {"name", v.name},
           {"pci_bus_id", v.pci_bus_id},
           {"cpu_affinity", v.cpu_affinity},
           {"numa_affinity", v.numa_affinity},
           {"gpu_numa_id", v.gpu_numa_id}};
}

void from_json(const json& j, GpuTopology& v) {
  json_fields::require(j, "topology GPU", "index", v.index);
  json_fields::require(j, "topology GPU", "name", v.name);
  json_fields::optional(j, "topology GPU", "pci_bus_id", v.pci_bus_id);
  json_fields::optional(j, "topology GPU", "cpu_affinity", v.cpu_affinity);
  if (j.contains("numa_affinity")) {
    json_fields::optional(j, "topology GPU", "numa_affinity", v.numa_affinity);
  } else {  // recorded before the NUMA columns were split: numa_node was the PCI device's numa_node
    int numa_node = -1;
    json_fields::optional(j, "topology GPU", "numa_node", numa_node);
    v.numa_affinity = numa_node < 0 ? "" : std::to_string(numa_node);
  }
  json_fields::optional(j, "topology GPU", "gpu_numa_id", v.gpu_numa_id);
}

namespace {

using json_fields::field;
using json_fields::Read;

// Each record's fields, once: from_json reads them in this order, to_json writes them.
constexpr auto kNicFields = std::tuple{
    field("name", &NicTopology::name), field("netdevs", &NicTopology::netdevs, Read::optional),
    field("pci_bus_id", &NicTopology::pci_bus_id, Read::optional),
    field("numa_affinity", &NicTopology::numa_affinity, Read::optional)};

constexpr auto kTopologyFields = std::tuple{
    field("gpus", &TopologyTable::gpus), field("links", &TopologyTable::links),
    field("nics", &TopologyTable::nics, Read::optional),
    field("gpu_nic_links", &TopologyTable::gpu_nic_links, Read::optional),
    field("nic_links", &TopologyTable::nic_links, Read::optional),
    field("driver_version", &TopologyTable::driver_version, Read::optional)};

}  // namespace

void to_json(json& j, const NicTopology& v) { json_fields::write_fields(j, v, kNicFields); }

void from_json(const json& j, NicTopology& v) { json_fields::read_fields(j, "topology NIC", v, kNicFields); }

void to_json(json& j, const TopologyTable& v) { json_fields::write_fields(j, v, kTopologyFields); }

void from_json(const json& j, TopologyTable& v) {
  json_fields::read_fields(j, "topology", v, kTopologyFields);
  v.validate();
}

TopologyTable load_topology(const std::string& path) {
  std::istringstream in(read_small_file(path, uint64_t{64} << 20,
                                        fmt::format("topology (write one with `ddpx topo --json {}`)", path)));
  try {
    return parse_json(in, "the file").get<TopologyTable>();
  } catch (const json::exception& e) {
    fail("topology '{}' is not valid JSON: {}", path, e.what());
  } catch (const Error& e) {
    fail("topology '{}': {}", path, e.what());
  }
}

}  // namespace ddpx
