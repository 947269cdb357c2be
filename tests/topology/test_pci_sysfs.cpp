// PCI relationships, NUMA nodes and NIC discovery on fake sysfs trees built in a temporary folder: a host bridge
// with a PCIe switch holding a GPU and a ConnectX NIC, a second GPU on another root port, a third GPU and a NIC
// on another host bridge of the same node, one on another node; plus virtual interfaces that must be skipped.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "topology/nic_topology.hpp"
#include "topology/pci_sysfs.hpp"
#include "topology/topology.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;

class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("ddpx_fake_sysfs_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "bus/pci/devices");
    fs::create_directories(root_ / "class/net");
    fs::create_directories(root_ / "class/infiniband");
  }
  void TearDown() override { fs::remove_all(root_); }

  // A PCI function at devices/<path> (components joined by '/'), linked from bus/pci/devices, with numa_node.
  void add_pci(const std::string& path, int numa_node) {
    const fs::path dir = root_ / "devices" / path;
    fs::create_directories(dir);
    std::ofstream(dir / "numa_node") << numa_node << "\n";
    fs::create_directory_symlink(dir, root_ / "bus/pci/devices" / dir.filename());
  }
  // A class entry (net or infiniband) whose device link points at devices/<device_path>.
  void add_class(const std::string& cls, const std::string& name, const std::string& device_path) {
    const fs::path entry = root_ / "class" / cls / name;
    fs::create_directories(entry);
    if (!device_path.empty()) {
      fs::create_directories(root_ / "devices" / device_path);
      fs::create_directory_symlink(root_ / "devices" / device_path, entry / "device");
    }
  }
  void set_online_nodes(const std::string& nodes) {
    fs::create_directories(root_ / "devices/system/node");
    std::ofstream(root_ / "devices/system/node/online") << nodes << "\n";
  }
  std::string root() const { return root_.string(); }

  // Node 0: host bridge pci0000:17 with root port 17:01.0 -> switch (18:00.0 up, 19:00.0 / 19:04.0 down) holding
  // GPU 1a:00.0 and the NIC 1b:00.0/.1 (two ports); GPU 1d:00.0 on root port 17:02.0. Host bridge pci0000:5d
  // with GPU 5e:00.0 and NIC 5f:00.0 behind a two-level switch. Node 1: host bridge pci0000:97 with GPU 98:00.0.
  void build_machine() {
    add_pci("pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:00.0/0000:1a:00.0", 0);
    add_pci("pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:04.0/0000:1b:00.0", 0);
    add_pci("pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:04.0/0000:1b:00.1", 0);
    add_pci("pci0000:17/0000:17:02.0/0000:1d:00.0", 0);
    add_pci("pci0000:5d/0000:5d:01.0/0000:5e:00.0/0000:5f:00.0/0000:60:00.0/0000:61:00.0/0000:62:00.0", 0);
    add_pci("pci0000:5d/0000:5d:01.0/0000:5e:00.0/0000:5f:01.0/0000:63:00.0", 0);
    add_pci("pci0000:97/0000:97:01.0/0000:98:00.0", 1);
    add_class("infiniband", "mlx5_0", "pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:04.0/0000:1b:00.0");
    add_class("infiniband", "mlx5_1", "pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:04.0/0000:1b:00.1");
    add_class("net", "ibp27s0f0", "pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:04.0/0000:1b:00.0");
    add_class("net", "enp99s0", "pci0000:5d/0000:5d:01.0/0000:5e:00.0/0000:5f:01.0/0000:63:00.0");
    add_class("net", "lo", "");                      // no device link
    add_class("net", "veth1", "virtual/net/veth1");  // not on PCI
    set_online_nodes("0-1");
  }

 private:
  fs::path root_;
};

TEST_F(FakeSysfs, PciRelationshipsFollowThePciTree) {
  build_machine();
  EXPECT_EQ(pci_path(root(), "00000000:1A:00.0"),
            (std::vector<std::string>{"pci0000:17", "0000:17:01.0", "0000:18:00.0", "0000:19:00.0", "0000:1a:00.0"}));
  EXPECT_TRUE(pci_path(root(), "0000:ee:00.0").empty());
  EXPECT_EQ(pci_relationship(root(), "0000:1a:00.0", "0000:1a:00.0"), "X");
  EXPECT_EQ(pci_relationship(root(), "0000:1a:00.0", "0000:1b:00.0"), "PIX");  // one switch
  EXPECT_EQ(pci_relationship(root(), "0000:1b:00.0", "0000:1b:00.1"), "PIX");  // two functions of one card
  EXPECT_EQ(pci_relationship(root(), "0000:1a:00.0", "0000:1d:00.0"), "PHB");  // root ports of one host bridge
  EXPECT_EQ(pci_relationship(root(), "0000:62:00.0", "0000:63:00.0"), "PXB");  // two levels of switches
  EXPECT_EQ(pci_relationship(root(), "0000:1a:00.0", "0000:62:00.0"), "NODE");  // host bridges on node 0
  EXPECT_EQ(pci_relationship(root(), "0000:1a:00.0", "0000:98:00.0"), "SYS");   // node 0 to node 1
  EXPECT_EQ(pci_relationship(root(), "0000:1a:00.0", "0000:ee:00.0"), "");      // unknown: no guess
  EXPECT_EQ(pci_numa_node(root(), "0000:98:00.0"), 1);
}

TEST_F(FakeSysfs, NumaNodeMinusOneIsNodeZeroOnlyOnOneNodeMachines) {
  add_pci("pci0000:00/0000:00:01.0/0000:01:00.0", -1);
  add_pci("pci0000:80/0000:80:01.0/0000:81:00.0", -1);
  EXPECT_EQ(pci_numa_node(root(), "0000:01:00.0"), -1);  // nodes unknown
  EXPECT_EQ(pci_relationship(root(), "0000:01:00.0", "0000:81:00.0"), "SYS");
  set_online_nodes("0");
  EXPECT_EQ(pci_numa_node(root(), "0000:01:00.0"), 0);
  EXPECT_EQ(pci_relationship(root(), "0000:01:00.0", "0000:81:00.0"), "NODE");
}

TEST_F(FakeSysfs, FindsPciNicsAndSkipsVirtualOnes) {
  build_machine();
  const std::vector<NicTopology> nics = find_nics(root());
  ASSERT_EQ(nics.size(), 3u);
  EXPECT_EQ(nics[0], (NicTopology{"mlx5_0", {"ibp27s0f0"}, "0000:1b:00.0", "0"}));
  EXPECT_EQ(nics[1], (NicTopology{"mlx5_1", {}, "0000:1b:00.1", "0"}));
  EXPECT_EQ(nics[2], (NicTopology{"enp99s0", {"enp99s0"}, "0000:63:00.0", "0"}));
  EXPECT_TRUE(find_nics(root() + "/no-such-sysfs").empty());
}

TEST_F(FakeSysfs, AddsNicColumnsToTheTableAndRoundTripsThroughJson) {
  build_machine();
  TopologyTable table;
  table.gpus = {{0, "NVIDIA H200", "00000000:1A:00.0", "0-47", "0", -1},
                {1, "NVIDIA H200", "00000000:62:00.0", "0-47", "0", -1},
                {2, "NVIDIA H200", "00000000:98:00.0", "48-95", "1", -1}};
  table.links = {{"X", "NODE", "SYS"}, {"NODE", "X", "SYS"}, {"SYS", "SYS", "X"}};
  EXPECT_EQ(add_nics(table, root()), "");
  ASSERT_NO_THROW(table.validate());
  EXPECT_EQ(table.gpu_nic_links, (std::vector<std::vector<std::string>>{
                                     {"PIX", "PIX", "NODE"}, {"NODE", "NODE", "PXB"}, {"SYS", "SYS", "SYS"}}));
  EXPECT_EQ(table.nic_links[0], (std::vector<std::string>{"X", "PIX", "NODE"}));
  const std::string text = format_topology(table);
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "        GPU0    GPU1    GPU2    NIC0    NIC1    NIC2    CPU Affinity    NUMA Affinity   GPU NUMA ID");
  EXPECT_NE(text.find("\nGPU0     X      NODE    SYS     PIX     PIX     NODE    0-47            0               N/A\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\nNIC2    NODE    PXB     SYS     NODE    NODE     X\n"), std::string::npos) << text;
  EXPECT_NE(text.find("NIC Legend:\n\n  NIC0: mlx5_0 (net ibp27s0f0, 0000:1b:00.0, NUMA 0)\n"
                      "  NIC1: mlx5_1 (no network interface, 0000:1b:00.1, NUMA 0)\n"
                      "  NIC2: enp99s0 (0000:63:00.0, NUMA 0)\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(nlohmann::json(table).get<TopologyTable>(), table);

  TopologyTable unplaced = table;
  unplaced.gpus[1].pci_bus_id = "00000000:EE:00.0";
  EXPECT_EQ(add_nics(unplaced, root()),
            "NICs not shown: GPU1 (PCI 00000000:EE:00.0) is not under " + root() + "/bus/pci/devices");
  EXPECT_TRUE(unplaced.nics.empty());
  EXPECT_NO_THROW(unplaced.validate());
}

TEST(PciSysfs, BusIds) {
  EXPECT_EQ(normalize_pci_bus_id("00000000:3B:00.0"), "0000:3b:00.0");
  EXPECT_TRUE(is_pci_bus_id("0000:3b:00.0"));
  EXPECT_FALSE(is_pci_bus_id("virtio2"));
  EXPECT_FALSE(is_pci_bus_id("0000:3b:00:0"));
}

}  // namespace
}  // namespace ddpx
