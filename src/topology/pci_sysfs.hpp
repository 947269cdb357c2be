// PCI placement read from sysfs: where a PCI function sits in the PCI tree, its NUMA node, and the relationship
// between two functions in `nvidia-smi topo -m`'s words. Every function takes the sysfs root ("/sys" on a live
// machine) so that tests can build a fake tree in a temporary folder.
// Guarantees: nothing here throws for a missing or unreadable sysfs entry; it answers "unknown" ("", -1, or an
// empty path) instead, and pci_relationship() answers "" when either function's place is unknown, never a guess.
// Derivations:
//  - the PCI path is the realpath of <root>/bus/pci/devices/<bus id> below <root>/devices: the host bridge
//    ("pci0000:17"), then every bridge down to the function ("0000:17:01.0", "0000:18:00.0", "0000:19:00.0");
//  - the NUMA node is the function's numa_node file; -1 there on a machine whose <root>/devices/system/node/online
//    is "0" (one node; the kernel writes -1 when firmware gives no proximity domain) is node 0;
//  - the relationship: same function "X"; same host bridge and at most one bridge on each side below their
//    deepest common bridge (both behind one switch, or functions of one card) "PIX"; a common bridge but more
//    bridges on a side "PXB"; same host bridge without a common bridge "PHB"; different host bridges on one NUMA
//    node "NODE"; otherwise (other node, or a node unknown) "SYS".
#pragma once
#include <string>
#include <vector>

namespace ddpx {

// "00000000:19:00.0" and "0000:19:00.0" name the same function: lower case, domain cut to 4 hex digits.
std::string normalize_pci_bus_id(std::string bus_id);

// True for "dddd:bb:dd.f" (hex digits, lower or upper case).
bool is_pci_bus_id(const std::string& name);

// The path components below <root>/devices, host bridge first and the function last; empty when unknown.
std::vector<std::string> pci_path(const std::string& sysfs_root, const std::string& bus_id);

// The function's NUMA node as described above; -1 when unknown.
int pci_numa_node(const std::string& sysfs_root, const std::string& bus_id);

// "X", "PIX", "PXB", "PHB", "NODE", "SYS", or "" when either path is unknown.
std::string pci_relationship(const std::string& sysfs_root, const std::string& bus_a, const std::string& bus_b);

}  // namespace ddpx
