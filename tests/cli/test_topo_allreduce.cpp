// `ddpx topo` from recorded NVML tables and NCCL logs, and on whatever machine runs the test (a clear message
// and exit 0 without GPUs); `ddpx allreduce` on the CPU with 2 MPI ranks: rows, checked sums and a peak table
// that load_peak_table reads.
#include <gtest/gtest.h>

#include <sstream>

#include <algorithm>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "analysis/comm_stats.hpp"
#include "topology/topology.hpp"

namespace ddpx {
namespace {

using testing::fresh_dir;
using testing::recorded;
using testing::run_ddpx;

TEST(Topo, RecordedNvlinkTablePrintsMatrixAffinityAndTransports) {
  const auto r = run_ddpx("topo --from-json " + recorded("topo_2xh200_nv18.json"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("CPU Affinity"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("0-47,96-143"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("NVIDIA H200 (00000000:3B:00.0)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("GPU0 - GPU1  NV18  -> P2P/CUMEM"), std::string::npos) << r.output;

  const auto off = run_ddpx("topo --p2p-disabled --from-json " + recorded("topo_2xh200_nv18.json"));
  ASSERT_EQ(off.status, 0) << off.output;
  EXPECT_NE(off.output.find("GPU0 - GPU1  NV18  -> SHM"), std::string::npos) << off.output;
}

TEST(Topo, RecordedPcieTableAndTheTransportALogShows) {
  const auto r = run_ddpx("topo --from-json " + recorded("topo_8xl40s_pcie.json") + " --nccl-log " +
                          recorded("nccl_info_shm.log"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("GPU7"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("48-95,144-191"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("GPU3 - GPU4  SYS   -> SHM"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("GPU0 - GPU1  NODE  -> SHM"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("NCCL transport used"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("SHM/direct/direct"), std::string::npos) << r.output;
  // A path that is no log (here an endless device) is refused at 256 MiB instead of filling the memory.
  const auto endless = run_ddpx("topo --from-json " + recorded("topo_8xl40s_pcie.json") + " --nccl-log /dev/zero");
  EXPECT_EQ(endless.status, 2) << endless.output;
  EXPECT_NE(endless.output.find("--nccl-log /dev/zero: larger than 256 MiB"), std::string::npos) << endless.output;
}

TEST(Topo, ProbingNeverCrashesAndJsonRoundTrips) {
  const auto dir = fresh_dir("topo");
  const auto file = dir / "topo.json";
  const auto plain = run_ddpx("topo");
  EXPECT_EQ(plain.status, 0) << plain.output;
  const auto r = run_ddpx("topo --json " + file.string());
  if (plain.output.find("no GPU topology on this machine") != std::string::npos) {
    // No driver or GPU: the probe explains itself; asking for a file that cannot be written is an error.
    EXPECT_NE(plain.output.find("--from-json"), std::string::npos) << plain.output;
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("--json"), std::string::npos) << r.output;
  } else {
    ASSERT_EQ(r.status, 0) << r.output;
    const TopologyTable table = load_topology(file.string());
    EXPECT_FALSE(table.gpus.empty());
    const auto again = run_ddpx("topo --from-json " + file.string());
    EXPECT_EQ(again.status, 0) << again.output;
    EXPECT_NE(again.output.find(table.gpus.front().name), std::string::npos) << again.output;
  }
  EXPECT_NE(run_ddpx("topo --from-json /nonexistent/topo.json").status, 0);
  std::filesystem::remove_all(dir);
}

#ifdef DDPX_HAVE_MPI
TEST(Allreduce, CpuTwoRanksPrintsCheckedRowsAndAPeakTable) {
  const auto dir = fresh_dir("allreduce");
  const auto file = dir / "peak.json";
  const auto r = run_ddpx("allreduce --device cpu --nproc-per-node 2 --sizes 1K:64K --iters 3 --warmup 1 --json " +
                          file.string());
  ASSERT_EQ(r.status, 0) << r.output;
  // nccl-tests' all_reduce_perf format, read the way its users' scripts read it.
  EXPECT_NE(r.output.find("# nThread 1 nGpus 1 minBytes 1024 maxBytes 65536 step: 2(factor) warmup iters: 1 iters: 3"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("# Library: Open MPI"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("# Using devices\n#  Rank  0 Group  0 Pid"), std::string::npos) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '['), 2) << "one device line per rank\n" << r.output;
  const std::regex data_row(
      R"((?:^|\n)\s*(\d+)\s+(\d+)\s+float\s+sum\s+-1\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+0\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+0\s*(?=\n))");
  int64_t expected_bytes = 1024;
  for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), data_row); it != std::sregex_iterator();
       ++it, expected_bytes *= 2) {
    EXPECT_EQ(std::stoll((*it)[1]), expected_bytes) << r.output;
    EXPECT_EQ(std::stoll((*it)[2]), expected_bytes / 4) << r.output;  // f32: size / 4
  }
  EXPECT_EQ(expected_bytes, 65536 * 2) << "one 13-field row per size, 1K .. 64K\n" << r.output;
  EXPECT_NE(r.output.find("# Out of bounds values : 0 OK"), std::string::npos) << r.output;
  std::smatch avg;
  ASSERT_TRUE(std::regex_search(r.output, avg, std::regex(R"(Avg bus bandwidth\s*:\s*([\d.]+))"))) << r.output;
  EXPECT_GT(std::stod(avg[1]), 0) << r.output;
  // Parsers of nccl-tests' output read to the end: after the table every line is a comment.
  const size_t footer = r.output.find("# Out of bounds values");
  std::istringstream after(r.output.substr(footer));
  for (std::string line; std::getline(after, line);)
    EXPECT_TRUE(line.empty() || line[0] == '#') << "a non-comment line after the footer: " << line;
  EXPECT_NE(r.output.find("# wrote " + file.string()), std::string::npos) << r.output;

  const PeakTable peak = load_peak_table(file.string());
  EXPECT_EQ(peak.world(), 2);
  EXPECT_EQ(peak.collective(), Collective::all_reduce);
  EXPECT_EQ(peak.link(), "MPI");
  ASSERT_EQ(peak.points().size(), 7u);  // 1K .. 64K
  for (size_t i = 0; i < peak.points().size(); ++i) {
    EXPECT_EQ(peak.points()[i].bytes, int64_t{1024} << i);
    EXPECT_GT(peak.points()[i].busbw_GBps, 0);
  }
  // The extra rows keep nccl-tests' arithmetic: with 2 ranks busbw = algbw * 2(n-1)/n = algbw.
  const auto json = nlohmann::json::parse(testing::read_text(file));
  ASSERT_EQ(json["rows"].size(), 7u);
  for (const auto& row : json["rows"]) {
    EXPECT_EQ(row["count"].get<int64_t>() * 4, row["bytes"].get<int64_t>());
    EXPECT_EQ(row["wrong"].get<int64_t>(), 0);
    EXPECT_EQ(row["redop"], "sum");
    EXPECT_EQ(row["root"], -1);
    EXPECT_EQ(row["out_of_place"]["wrong"].get<int64_t>(), 0);
    EXPECT_GT(row["out_of_place"]["time_us"].get<double>(), 0);
    EXPECT_NEAR(row["busbw_GBps"].get<double>(), row["algbw_GBps"].get<double>(),
                1e-9 * row["algbw_GBps"].get<double>());
    const double expected_algbw = row["bytes"].get<double>() / (row["time_us"].get<double>() * 1e3);
    EXPECT_NEAR(row["algbw_GBps"].get<double>(), expected_algbw, 1e-9 * expected_algbw);
  }
  std::filesystem::remove_all(dir);
}

TEST(Allreduce, AcceptsNcclTestsShortFlags) {
  // all_reduce_perf -b 1K -e 4K -f 2 -n 2 -w 1 -c 1 -d float, as a cluster's scripts spell it.
  const auto r = run_ddpx("allreduce --device cpu --nproc-per-node 2 -b 1K -e 4K -f 2 -n 2 -w 1 -c 1 -d float");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("# nThread 1 nGpus 1 minBytes 1024 maxBytes 4096 step: 2(factor) warmup iters: 1 iters: 2"),
            std::string::npos)
      << r.output;
  for (const int64_t bytes : {1024, 2048, 4096})
    EXPECT_NE(r.output.find(fmt::format("{:>12}  {:>12}     float     sum      -1", bytes, bytes / 4)), std::string::npos)
        << bytes << "\n" << r.output;
  const auto both = run_ddpx("allreduce --device cpu --sizes 1K -b 1K -e 4K");
  EXPECT_EQ(both.status, 2) << both.output;
  EXPECT_NE(both.output.find("-b/-e/-f both give the sizes"), std::string::npos) << both.output;
}

TEST(Allreduce, HalfPrecisionCountsElementsOfTwoBytes) {
  const auto r = run_ddpx("allreduce --device cpu --nproc-per-node 2 --sizes 2K --dtype bf16 --iters 2 --warmup 0 "
                          "--average 3");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find(fmt::format("{:>12}  {:>12}  {:>8}     sum      -1", 2048, 1024, "bfloat16")),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("# Time: slowest rank (nccl-tests -a 3)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("# Out of bounds values : 0 OK"), std::string::npos) << r.output;
}

// allreduce opens the same job as train (dist/job.hpp): its collectives are watched, so a rank that stops is named
// and the job ends after --comm-timeout instead of hanging (the test fault hook stops rank 1 before MPI starts).
TEST(Allreduce, AStoppedRankIsNamedAfterTheTimeoutNotAHang) {
  const auto r = run_ddpx("allreduce --device cpu --nproc-per-node 2 --sizes 1K --iters 2 --warmup 0 --comm-timeout 2",
                          "DDPX_TEST_FAULT=start:1:stop");
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("rank 0: communication timed out after 2 s in communicator creation (mpi)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("rank 1's process"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("is stopped"), std::string::npos) << r.output;
}
#endif

TEST(Allreduce, BadFlagsAreNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"allreduce --device cpu --dtype f8", "--dtype f8"},
      {"allreduce --device cpu --sizes 1M:1K", "backwards"},
      {"allreduce --device cpu --sizes 1K --json /tmp/never.json", "at least 2 ranks"},
      {"allreduce --device tpu", "--device tpu"},
      {"allreduce --device cpu --iters 0", "--iters 0"},
      {"allreduce --device cpu --average 4", "--average 4"},
      {"allreduce --device cpu --comm-timeout 0", "--comm-timeout must be between 0.001 and 1e7 seconds, got 0"},
#ifdef DDPX_HAVE_MPI
      {"allreduce --device cpu --sizes 1K --nproc-per-node 2 --json /nonexistent/dir/peak.json", "--json /nonexistent/dir/peak.json: the folder"},
#endif
  };
  for (const auto& [args, expected] : cases) {
    const auto r = run_ddpx(args);
    EXPECT_EQ(r.output.find("internal"), std::string::npos) << args << " printed: " << r.output;
    EXPECT_NE(r.status, 0) << args;
    EXPECT_NE(r.output.find(expected), std::string::npos) << args << " printed: " << r.output;
  }
}

}  // namespace
}  // namespace ddpx
