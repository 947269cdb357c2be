// Topology tables, printing, NCCL transport prediction and NCCL log parsing, on recorded inputs; the NVML prober
// is checked for its never-crash contract (a real table only where a driver exists).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "topology/nccl_transport.hpp"
#include "topology/nvml_topology.hpp"
#include "topology/topology.hpp"
#include "recorded_data.hpp"

namespace ddpx {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

TEST(Topology, PrintsLikeNvidiaSmi) {
  const TopologyTable table = load_topology(testing::recorded_data("topo_2xh200_nv18.json"));
  const std::string text = format_topology(table);
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "        GPU0    GPU1    CPU Affinity    NUMA Affinity   GPU NUMA ID");
  // Recorded before the NUMA columns were split: "numa_node" is read as the NUMA affinity, GPU NUMA ID is N/A.
  EXPECT_EQ(table.gpus[0].numa_affinity, "0");
  EXPECT_EQ(table.gpus[0].gpu_numa_id, -1);
  EXPECT_TRUE(table.nics.empty());
  EXPECT_NE(text.find("\nGPU0     X      NV18    0-47,96-143     0               N/A\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nGPU1    NV18     X      0-47,96-143     0               N/A\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("NIC"), std::string::npos) << text;
  EXPECT_NE(text.find("GPU1: NVIDIA H200 (00000000:3B:00.0)"), std::string::npos) << text;
  EXPECT_NE(text.find("NV#  = Connection traversing a bonded set of # NVLinks"), std::string::npos);
  EXPECT_EQ(nlohmann::json(table).get<TopologyTable>(), table);
}

TEST(Topology, ValidateNamesTheBrokenPair) {
  TopologyTable table = load_topology(testing::recorded_data("topo_8xl40s_pcie.json"));
  EXPECT_EQ(table.gpus.size(), 8u);
  EXPECT_EQ(table.links[0][5], "SYS");
  EXPECT_EQ(table.gpus[5].numa_affinity, "1");
  table.links[2][6] = "NODE";  // no longer symmetric
  try {
    table.validate();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("GPU2 to GPU6"), std::string::npos) << e.what();
  }
  table.links[2][6] = "NVX";
  EXPECT_THROW(table.validate(), Error);
  table.links[2][6] = "SYS";
  table.links[3][3] = "NODE";
  EXPECT_THROW(table.validate(), Error);
  EXPECT_EQ(nvlink_count("NV18"), 18);
  EXPECT_EQ(nvlink_count("NODE"), 0);
  EXPECT_EQ(nvlink_count("NV"), 0);
}

TEST(Topology, PredictsNcclTransportFromTheLink) {
  EXPECT_EQ(predict_nccl_transport("NV18", false), "P2P/CUMEM");
  EXPECT_EQ(predict_nccl_transport("PIX", false), "P2P/CUMEM");
  EXPECT_EQ(predict_nccl_transport("PXB", false), "P2P/CUMEM");
  EXPECT_EQ(predict_nccl_transport("PHB", false), "SHM");
  EXPECT_EQ(predict_nccl_transport("NODE", false), "SHM");  // the seed's g6e: "via SHM/direct/direct"
  EXPECT_EQ(predict_nccl_transport("SYS", false), "SHM");
  EXPECT_EQ(predict_nccl_transport("NV18", true), "SHM");  // NCCL_P2P_DISABLE=1
  EXPECT_EQ(predict_nccl_transport("NET", false), "NET");
  EXPECT_THROW(predict_nccl_transport("X", false), Error);
  EXPECT_THROW(predict_nccl_transport("QPI", false), Error);
  const std::string prediction =
      format_transport_prediction(load_topology(testing::recorded_data("topo_8xl40s_pcie.json")), false);
  EXPECT_NE(prediction.find("GPU0 - GPU1  NODE  -> SHM"), std::string::npos) << prediction;
  EXPECT_NE(prediction.find("GPU3 - GPU4  SYS   -> SHM"), std::string::npos) << prediction;
}

TEST(Topology, TransportFamilies) {
  EXPECT_EQ(transport_family("P2P/CUMEM/read"), "P2P/CUMEM");
  EXPECT_EQ(transport_family("P2P/IPC"), "P2P/IPC");
  EXPECT_EQ(transport_family("P2P/direct pointer"), "P2P/direct");
  EXPECT_EQ(transport_family("SHM/direct/direct"), "SHM");
  EXPECT_EQ(transport_family("NET/IB/0"), "NET");
}

TEST(Topology, ParsesTheTransportNcclUsed) {
  const NcclTransportSummary nvlink = parse_nccl_transports(read_text(testing::recorded_data("nccl_info_nvlink.log")));
  ASSERT_EQ(nvlink.connections.size(), 4u);
  EXPECT_EQ(nvlink.connections[2], (NcclConnection{0, 1, 0, "P2P/CUMEM/read"}));
  EXPECT_EQ(nvlink.main_family, "P2P/CUMEM");
  EXPECT_EQ(nvlink.main_transport, "P2P/CUMEM/read");
  EXPECT_EQ(nvlink.main_family, predict_nccl_transport("NV18", false));  // prediction and log agree

  const NcclTransportSummary shm = parse_nccl_transports(read_text(testing::recorded_data("nccl_info_shm.log")));
  ASSERT_EQ(shm.connections.size(), 6u);
  EXPECT_EQ(shm.family_counts.at("SHM"), 4);
  EXPECT_EQ(shm.family_counts.at("NET"), 1);
  EXPECT_EQ(shm.family_counts.at("P2P/direct"), 1);
  EXPECT_EQ(shm.main_family, "SHM");
  EXPECT_EQ(shm.main_transport, "SHM/direct/direct");
  EXPECT_EQ(shm.connections[4], (NcclConnection{2, 0, 2, "NET/Socket/0"}));  // hex bus ids, [send]
  EXPECT_EQ(shm.connections[5].transport, "P2P/direct pointer");
  EXPECT_TRUE(parse_nccl_transports("no nccl here\n").main_family.empty());
}

// Found by tests/fuzz/fuzz_nccl_log: std::stoi threw std::out_of_range on a rank that does not fit an int, and
// std::regex overflowed the stack on a line of a few MB (a log without newlines, a binary file).
TEST(Topology, NcclLogParserSkipsLinesNcclDoesNotWrite) {
  const std::string good = "host:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n";
  const std::string huge_rank = "host:1:2 [0] NCCL INFO Channel 01/0 : 99999999999[0] -> 1[1] via P2P/CUMEM/read\n";
  const std::string long_line = "host:1:2 [0] NCCL INFO Channel 02/0 : 0[0] -> 1[1] via P2P" +
                                std::string(size_t{4} << 20, 'x') + "\n";
  NcclTransportSummary summary;
  ASSERT_NO_THROW(summary = parse_nccl_transports(huge_rank + long_line + good));
  ASSERT_EQ(summary.connections.size(), 1u);
  EXPECT_EQ(summary.connections[0], (NcclConnection{0, 0, 1, "P2P/CUMEM/read"}));
}

TEST(Topology, ProberWithoutNvmlReturnsAMessage) {
  const TopologyProbe probe = probe_topology("libddpx-no-such-nvml.so.1");
  EXPECT_FALSE(probe.table.has_value());
  EXPECT_EQ(probe.message, "NVML not found (libddpx-no-such-nvml.so.1): no NVIDIA driver on this machine");
}

TEST(Topology, ProberOnThisMachineNeverCrashes) {
  const TopologyProbe probe = probe_topology();
  if (probe.table) {
    EXPECT_NO_THROW(probe.table->validate());
    EXPECT_EQ(probe.message, "");
    std::cout << format_topology(*probe.table);
  } else {
    EXPECT_EQ(probe.message.rfind("NVML", 0), 0u) << probe.message;
  }
}

}  // namespace
}  // namespace ddpx
