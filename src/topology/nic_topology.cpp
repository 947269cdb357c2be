// NICs from sysfs (see nic_topology.hpp).
#include "topology/nic_topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>

#include "topology/pci_sysfs.hpp"

namespace ddpx {

namespace fs = std::filesystem;

namespace {

// The PCI function behind <class dir>/<name>/device: the device itself, or its parent (virtio-net's
// ".../0000:00:03.0/virtio2"); "" when neither is a PCI function.
std::string pci_function_of(const fs::path& class_entry) {
  std::error_code ec;
  const fs::path device = fs::canonical(class_entry / "device", ec);
  if (ec) return "";
  if (is_pci_bus_id(device.filename().string())) return normalize_pci_bus_id(device.filename().string());
  if (is_pci_bus_id(device.parent_path().filename().string()))
    return normalize_pci_bus_id(device.parent_path().filename().string());
  return "";
}

// Entries of <root>/class/<cls> with the PCI function each sits on.
std::vector<std::pair<std::string, std::string>> class_devices(const std::string& sysfs_root, const char* cls) {
  std::vector<std::pair<std::string, std::string>> out;
  std::error_code ec;
  for (fs::directory_iterator it(fs::path(sysfs_root) / "class" / cls, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string bus_id = pci_function_of(it->path());
    if (!bus_id.empty()) out.emplace_back(it->path().filename().string(), bus_id);
  }
  return out;
}

// Natural order: digit runs compare as numbers.
bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t i2 = i, j2 = j;
      while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2]))) ++i2;
      while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2]))) ++j2;
      const std::string na = a.substr(i, i2 - i), nb = b.substr(j, j2 - j);
      const size_t za = na.find_first_not_of('0'), zb = nb.find_first_not_of('0');
      const std::string ta = za == std::string::npos ? "" : na.substr(za), tb = zb == std::string::npos ? "" : nb.substr(zb);
      if (ta.size() != tb.size()) return ta.size() < tb.size();
      if (ta != tb) return ta < tb;
      i = i2;
      j = j2;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

}  // namespace

std::vector<NicTopology> find_nics(const std::string& sysfs_root) {
  std::map<std::string, NicTopology> by_function;
  std::map<std::string, bool> has_rdma;
  for (const auto& [name, bus_id] : class_devices(sysfs_root, "infiniband")) {
    NicTopology& nic = by_function[bus_id];
    // Two RDMA devices on one function do not happen with real drivers; keep the first in natural order.
    if (!has_rdma[bus_id] || natural_less(name, nic.name)) nic.name = name;
    has_rdma[bus_id] = true;
  }
  for (const auto& [name, bus_id] : class_devices(sysfs_root, "net")) by_function[bus_id].netdevs.push_back(name);
  std::vector<NicTopology> nics;
  for (auto& [bus_id, nic] : by_function) {
    if (pci_path(sysfs_root, bus_id).empty()) continue;  // not under <root>/bus/pci/devices: no place to compare
    nic.pci_bus_id = bus_id;
    std::sort(nic.netdevs.begin(), nic.netdevs.end(), natural_less);
    if (!has_rdma[bus_id]) nic.name = nic.netdevs.front();
    const int node = pci_numa_node(sysfs_root, bus_id);
    nic.numa_affinity = node < 0 ? "" : std::to_string(node);
    nics.push_back(std::move(nic));
  }
  std::sort(nics.begin(), nics.end(), [&](const NicTopology& a, const NicTopology& b) {
    const bool ra = has_rdma[a.pci_bus_id], rb = has_rdma[b.pci_bus_id];
    if (ra != rb) return ra;
    return natural_less(a.name, b.name);
  });
  return nics;
}

std::string add_nics(TopologyTable& table, const std::string& sysfs_root) {
  table.nics.clear();
  table.gpu_nic_links.clear();
  table.nic_links.clear();
  std::vector<NicTopology> nics = find_nics(sysfs_root);
  if (nics.empty()) return "";
  std::vector<std::vector<std::string>> gpu_nic(table.gpus.size(), std::vector<std::string>(nics.size()));
  for (size_t i = 0; i < table.gpus.size(); ++i) {
    for (size_t k = 0; k < nics.size(); ++k) {
      gpu_nic[i][k] = pci_relationship(sysfs_root, table.gpus[i].pci_bus_id, nics[k].pci_bus_id);
      if (gpu_nic[i][k].empty() || gpu_nic[i][k] == "X")
        return fmt::format("NICs not shown: GPU{} (PCI {}) is not under {}/bus/pci/devices", table.gpus[i].index,
                           table.gpus[i].pci_bus_id.empty() ? "bus id unknown" : table.gpus[i].pci_bus_id, sysfs_root);
    }
  }
  std::vector<std::vector<std::string>> nic_nic(nics.size(), std::vector<std::string>(nics.size()));
  for (size_t k = 0; k < nics.size(); ++k)
    for (size_t l = 0; l < nics.size(); ++l)
      nic_nic[k][l] = k == l ? "X" : pci_relationship(sysfs_root, nics[k].pci_bus_id, nics[l].pci_bus_id);
  table.nics = std::move(nics);
  table.gpu_nic_links = std::move(gpu_nic);
  table.nic_links = std::move(nic_nic);
  return "";
}

}  // namespace ddpx
