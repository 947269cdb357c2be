// PCI placement from sysfs (see pci_sysfs.hpp).
#include "topology/pci_sysfs.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

namespace ddpx {

namespace fs = std::filesystem;

std::string normalize_pci_bus_id(std::string id) {
  std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return std::tolower(c); });
  const size_t colon = id.find(':');
  if (colon != std::string::npos && colon > 4) {
    const std::string domain = id.substr(0, colon);
    if (domain.find_first_not_of('0') >= colon - 4) id = id.substr(colon - 4);
  }
  return id;
}

bool is_pci_bus_id(const std::string& name) {
  // dddd:bb:dd.f
  if (name.size() != 12 || name[4] != ':' || name[7] != ':' || name[10] != '.') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9, 11})
    if (!std::isxdigit(static_cast<unsigned char>(name[i]))) return false;
  return true;
}

std::vector<std::string> pci_path(const std::string& sysfs_root, const std::string& bus_id) {
  std::error_code ec;
  const fs::path devices = fs::weakly_canonical(fs::path(sysfs_root) / "devices", ec);
  if (ec) return {};
  const fs::path device =
      fs::canonical(fs::path(sysfs_root) / "bus" / "pci" / "devices" / normalize_pci_bus_id(bus_id), ec);
  if (ec) return {};
  const fs::path relative = device.lexically_relative(devices);
  std::vector<std::string> parts;
  for (const fs::path& part : relative) parts.push_back(part.string());
  if (parts.size() < 2 || parts[0] == ".." || parts[0].rfind("pci", 0) != 0) return {};
  return parts;
}

int pci_numa_node(const std::string& sysfs_root, const std::string& bus_id) {
  std::ifstream in(fs::path(sysfs_root) / "bus" / "pci" / "devices" / normalize_pci_bus_id(bus_id) / "numa_node");
  int node = -1;
  if (!(in >> node)) return -1;
  if (node >= 0) return node;
  std::ifstream online(fs::path(sysfs_root) / "devices" / "system" / "node" / "online");
  std::string nodes;
  if (online >> nodes && nodes == "0") return 0;
  return -1;
}

std::string pci_relationship(const std::string& sysfs_root, const std::string& bus_a, const std::string& bus_b) {
  const std::vector<std::string> a = pci_path(sysfs_root, bus_a);
  const std::vector<std::string> b = pci_path(sysfs_root, bus_b);
  if (a.empty() || b.empty()) return "";
  if (a == b) return "X";
  if (a[0] != b[0]) {
    const int node_a = pci_numa_node(sysfs_root, bus_a), node_b = pci_numa_node(sysfs_root, bus_b);
    return node_a >= 0 && node_a == node_b ? "NODE" : "SYS";
  }
  // Components 1 .. size-2 are bridges; the last is the function itself.
  size_t common = 1;  // number of leading components shared (the host bridge at least)
  while (common < a.size() - 1 && common < b.size() - 1 && a[common] == b[common]) ++common;
  if (common == 1) return "PHB";
  const size_t bridges_a = a.size() - 1 - common, bridges_b = b.size() - 1 - common;
  return bridges_a <= 1 && bridges_b <= 1 ? "PIX" : "PXB";
}

}  // namespace ddpx
