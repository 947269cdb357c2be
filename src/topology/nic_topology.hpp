// Finding the machine's NICs in sysfs and placing them in a TopologyTable next to its GPUs.
// Guarantees:
//  - find_nics() lists every PCI function that carries an RDMA device (<root>/class/infiniband/*/device) or a
//    network interface (<root>/class/net/*/device, the PCI function itself or its parent for virtio); interfaces
//    without a device link (lo, veth, bridges, tunnels) and devices not on PCI are skipped. One NIC per PCI
//    function, named by its RDMA device when it has one (NCCL_IB_HCA's name), else by its interface; RDMA NICs
//    first, then by name in natural order (mlx5_2 before mlx5_10). Never throws: a missing sysfs gives none.
//  - add_nics() fills table.nics, gpu_nic_links and nic_links with pci_relationship() (pci_sysfs.hpp) and leaves
//    the table valid. When a GPU's PCI place is unknown under the root it adds no NICs and returns why; on
//    success it returns "".
#pragma once
#include <string>
#include <vector>

#include "topology/topology.hpp"

namespace ddpx {

std::vector<NicTopology> find_nics(const std::string& sysfs_root = "/sys");

std::string add_nics(TopologyTable& table, const std::string& sysfs_root = "/sys");

}  // namespace ddpx
