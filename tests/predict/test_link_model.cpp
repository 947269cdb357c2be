// predict/link_model and link_sources: all-reduce costs against hand-computed cases of NCCL's model (ring and tree,
// LL and Simple, latency per hop, one node and several), the measured-curve fit and its extrapolation, and the
// link errors (unknown presets, ranks beyond a node, files of other tools).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "error_expect.hpp"
#include "predict/link_model.hpp"
#include "predict/link_sources.hpp"

namespace ddpx::predict {
namespace {

namespace fs = std::filesystem;

TEST(LinkModel, LargeMessageOnOneNodeIsRingSimple) {
  // nvlink4, 8 ranks, 1e9 bytes: algbw = 460 * 8/14; latency = 8.4 + 14 hops * 3.4 us.
  const CollectiveCost c = allreduce_cost(link_preset("nvlink4"), 8, 1'000'000'000);
  EXPECT_EQ(c.algorithm, "ring");
  EXPECT_EQ(c.protocol, "Simple");
  EXPECT_NEAR(c.latency_ms, (8.4 + 14 * 3.4) / 1e3, 1e-12);
  EXPECT_NEAR(c.bandwidth_ms, 1e9 / (1e3 * 460.0 * 8 / 14) / 1e3, 1e-9);
  EXPECT_NEAR(c.ms, 3.86035, 1e-5);
}

TEST(LinkModel, SmallMessageOnOneNodeIsRingLowLatency) {
  // 1 KiB: ring LL pays 6.6 + 14 * 0.6 us and moves bytes at a quarter of the bandwidth; tree LL pays 6.8 + 2*7*0.6.
  const CollectiveCost c = allreduce_cost(link_preset("nvlink4"), 8, 1024);
  EXPECT_EQ(c.algorithm, "ring");
  EXPECT_EQ(c.protocol, "LL");
  EXPECT_NEAR(c.latency_ms, 15.0e-3, 1e-12);
  EXPECT_NEAR(c.ms, (15.0 + 1024 / (1e3 * 115.0 * 8 / 14)) / 1e3, 1e-12);
}

TEST(LinkModel, ManyNodesSmallMessageIsTree) {
  // ib-ndr, one rank per node, 1024 ranks, 1 KiB: ring LL pays 6.6 + 2046 * 2.7 us; tree LL 6.8 + 2 * 10 * 5.0.
  const CollectiveCost c = allreduce_cost(link_preset("ib-ndr"), 1024, 1024);
  EXPECT_EQ(c.algorithm, "tree");
  EXPECT_EQ(c.protocol, "LL");
  EXPECT_NEAR(c.latency_ms, 106.8e-3, 1e-12);
  EXPECT_NEAR(c.ms, (106.8 + 1024 / (1e3 * 45 * 0.9 / 3.8 * 0.5)) / 1e3, 1e-12);
  // The same call on a ring would cost more than 5 ms of latency alone.
  EXPECT_LT(c.ms, 5.5);
}

TEST(LinkModel, TwoNodesTakeTheNetworkBandwidthAndHops) {
  // nvlink4 nodes of 8 joined by ib-ndr, 16 ranks, 1e9 bytes: busbw min(460, 8 * 45); 28 NVLink hops and 2
  // network hops, times NCCL's 1.9 ring plateau for large multi-node messages.
  LinkModel link = link_preset("nvlink4");
  link.network = network_preset("ib-ndr");
  const CollectiveCost c = allreduce_cost(link, 16, 1'000'000'000);
  EXPECT_EQ(c.algorithm, "ring");
  EXPECT_NEAR(c.latency_ms, (8.4 + 28 * 3.4 + 2 * 14.0) * 1.9 / 1e3, 1e-12);
  EXPECT_NEAR(c.bandwidth_ms, 1e9 / (1e3 * 360.0 * 16 / 30) / 1e3, 1e-9);
}

TEST(LinkModel, RanksBeyondTheLinkAreRefused) {
  testing::expect_error([] { (void)allreduce_cost(link_preset("nvlink4"), 16, 1024); },
                        {"--ranks 16", "8 ranks per node", "--network ib-ndr"});
  LinkModel link = link_preset("pcie-shm");
  link.network = network_preset("ib-ndr");
  testing::expect_error([&] { (void)allreduce_cost(link, 12, 1024); }, {"--ranks 12", "multiple of 8"});
  testing::expect_error([] { (void)allreduce_cost(link_preset("nvlink3"), 1, 1024); }, {"--ranks 1", "2 or more"});
  EXPECT_EQ(max_ranks(link_preset("nvlink3")), 8);
  EXPECT_EQ(max_ranks(link), 1024);
  EXPECT_EQ(allreduce_cost(link_preset("nvlink3"), 2, 0).ms, 0);
}

TEST(LinkSources, UnknownPresetsAreNamed) {
  testing::expect_error([] { (void)link_preset("nvlink5"); }, {"nvlink5", "unknown preset", "pcie-shm", "ib-ndr"});
  testing::expect_error([] { (void)resolve_link("no-such-link"); }, {"no-such-link", "unknown preset"});
  testing::expect_error([] { (void)network_preset("roce"); }, {"--network roce", "ib-ndr"});
  for (const std::string& name : link_preset_names()) EXPECT_FALSE(link_preset(name).sources.empty()) << name;
}

// A world-2 table whose points lie on t = 10 us + bytes / (10 GB/s): the fit gives alpha = 5 us, peak 10 GB/s.
PeakTable line_table() {
  std::vector<PeakPoint> points;
  for (int64_t bytes = 1024; bytes <= (int64_t{64} << 20); bytes *= 4) {
    const double t_us = 10.0 + static_cast<double>(bytes) / 1e4;
    points.push_back({bytes, static_cast<double>(bytes) / (t_us * 1e3)});  // busbw = bytes * 1 / t
  }
  return PeakTable(points, Collective::all_reduce, 2, "MPI");
}

TEST(LinkSources, MeasuredCurveFitsLatencyAndBandwidth) {
  const MeasuredCurve curve = fit_measured_curve(line_table(), 2);
  EXPECT_NEAR(curve.hop_latency_us, 5.0, 1e-6);
  EXPECT_NEAR(curve.peak_busbw_GBps, 10.0, 1e-6);
}

TEST(LinkSources, MeasuredLinkReproducesItsWorldAndExtrapolates) {
  LinkModel link;
  link.intra.name = "measured";
  link.intra.measured = fit_measured_curve(line_table(), 2);
  link.intra.busbw_GBps = link.intra.measured->peak_busbw_GBps;
  link.ranks_per_node = 4;
  const int64_t bytes = 4 << 20;
  const double at_two_us = 10.0 + static_cast<double>(bytes) / 1e4;
  EXPECT_NEAR(allreduce_cost(link, 2, bytes).ms, at_two_us / 1e3, 1e-9);
  // 4 ranks: 2 * (4 - 2) more hops of 5 us, and bytes * (1.5 - 1) more at 10 GB/s.
  EXPECT_NEAR(allreduce_cost(link, 4, bytes).ms, (at_two_us + 20.0 + bytes * 0.5 / 1e4) / 1e3, 1e-9);
  // Below the smallest measured size: the fitted line (it meets the measurement there).
  EXPECT_NEAR(allreduce_cost(link, 2, 16).ms, (10.0 + 16 / 1e4) / 1e3, 1e-9);
}

class LinkFiles : public ::testing::Test {
 protected:
  fs::path dir = fs::temp_directory_path() / ("ddpx_test_predict_links_" + std::to_string(::getpid()));
  void SetUp() override { fs::create_directories(dir); }
  void TearDown() override { fs::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
};

TEST_F(LinkFiles, APeakTableLoadsWithItsFields) {
  const std::string path = write("peak.json", R"({"collective": "all_reduce", "world": 2, "link": "MPI",
    "device": "cpu", "backend": "mpi", "dtype": "f32",
    "points": [{"bytes": 1024, "busbw_GBps": 0.1}, {"bytes": 1048576, "busbw_GBps": 2.0}]})");
  const LinkModel link = load_link_file(path);
  EXPECT_EQ(link.device, "cpu");
  EXPECT_EQ(link.ranks_per_node, 2);
  ASSERT_TRUE(link.intra.measured.has_value());
  EXPECT_EQ(link.intra.measured->world, 2);
  EXPECT_NE(link.description.find("backend mpi"), std::string::npos) << link.description;
}

TEST_F(LinkFiles, FilesOfOtherToolsAreRefusedSayingWhatTheyAre) {
  testing::expect_error([&] { (void)load_link_file(write("nccl.txt",
      "#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
      "# Avg bus bandwidth    : 12.3\n")); }, {"nccl.txt", "text", "ddpx allreduce --nproc-per-node 2 --json"});
  testing::expect_error([&] { (void)load_link_file(write("run.json", R"({"config": {}, "ranks": []})")); },
                        {"run.json", "a run report"});
  testing::expect_error([&] { (void)load_link_file(write("p.json", R"({"tool": "ddpx predict", "rows": []})")); },
                        {"p.json", "ddpx predict's own output"});
  testing::expect_error([&] { (void)load_link_file(write("bench.json", R"({"rows": [], "runs": []})")); },
                        {"bench.json", "another command"});
  testing::expect_error([&] { (void)load_link_file(write("other.json", R"({"busbw": 3})")); },
                        {"other.json", "'points'"});
  testing::expect_error([&] { (void)load_link_file(write("list.json", "[1, 2]")); }, {"list.json", "not an object"});
  testing::expect_error([&] { (void)load_link_file(write("one.json",
      R"({"world": 1, "points": [{"bytes": 1024, "busbw_GBps": 1}]})")); }, {"one.json", "'world'", "2 or more"});
  testing::expect_error([&] { (void)load_link_file(write("gather.json",
      R"({"collective": "all_gather", "world": 2, "points": [{"bytes": 1024, "busbw_GBps": 1}]})")); },
      {"gather.json", "all_gather"});
  testing::expect_error([&] { (void)load_link_file(write("bad.json",
      R"({"world": 2, "points": [{"bytes": 1024}]})")); }, {"bad.json", "busbw_GBps"});
  testing::expect_error([&] { (void)load_link_file((dir / "absent.json").string()); }, {"absent.json", "no such"});
}

}  // namespace
}  // namespace ddpx::predict
