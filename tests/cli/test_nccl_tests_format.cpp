// cli/nccl_tests_format.hpp held against nccl-tests' all_reduce_perf output: the header lines scripts look for, the
// per-rank device lines in the layout nccl-tests' own parser reads, every data row read by the 13-field regex that
// users of nccl-tests parse it with, the footer's "Avg bus bandwidth" regex, and nccl-tests' -a time semantics.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli/nccl_tests_format.hpp"
#include "core/error.hpp"
#include "core/internal_assert.hpp"

namespace ddpx::cli {
namespace {

// The regexes nccl-tests' output is commonly parsed with (a data row: size count type redop root, then time algbw
// busbw #wrong out of place and in place; the footer's average).
const std::regex kDataRow(
    R"(^\s*(\d+)\s+(\d+)\s+(\w+)\s+(\w+)\s+(-?\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)\s*$)");
const std::regex kAvgBusbw(R"(Avg bus bandwidth\s*:\s*([\d.]+))");

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

NcclTestsRow row(int64_t bytes, double oop_us, double ip_us, double oop_busbw, double ip_busbw, int64_t wrong = 0) {
  NcclTestsRow r;
  r.bytes = bytes;
  r.count = bytes / 4;
  r.type = "float";
  r.out_of_place = {oop_us, oop_busbw, oop_busbw, 0};
  r.in_place = {ip_us, ip_busbw, ip_busbw, wrong};
  return r;
}

TEST(NcclTestsFormat, HeaderHasNcclTestsLinesAndTwoGroupColumnHeader) {
  NcclTestsRunInfo run;
  run.sizes = {1024, 2048, 4096};
  run.warmup = 5;
  run.iters = 20;
  run.library = "NCCL 2.28.3 (nccl-library=22803)";
  const std::string gpu = format_nccl_tests_device_line({0, 4242, "node1", 3, "0000:19:00", "NVIDIA H200"});
  const std::string cpu = format_nccl_tests_device_line({1, 4243, "node1", -1, "", ""});
  EXPECT_EQ(gpu, "#  Rank  0 Group  0 Pid   4242 on      node1 device  3 [0000:19:00] NVIDIA H200\n");
  EXPECT_EQ(cpu, "#  Rank  1 Group  0 Pid   4243 on      node1 device  0 [cpu] cpu\n");
  const std::string header = format_nccl_tests_header(run, {gpu, cpu});
  EXPECT_NE(header.find("# nThread 1 nGpus 1 minBytes 1024 maxBytes 4096 step: 2(factor) warmup iters: 5 iters: 20 "
                        "agg iters: 1 validation: 1 graph: 0\n"),
            std::string::npos)
      << header;
  EXPECT_NE(header.find("# Library: NCCL 2.28.3"), std::string::npos) << header;
  EXPECT_NE(header.find("# Using devices\n" + gpu + cpu), std::string::npos) << header;
  // nccl-tests' own reader of the device lines (util.cu's parseRankInfo) uses this layout.
  const std::regex device(R"(^#  Rank\s+(\d+) Group\s+(\d+) Pid\s+(\d+) on\s+(\S+) device\s+(\d+) \[([^\]]+)\] (.+)$)");
  std::smatch m;
  const std::string gpu_line = gpu.substr(0, gpu.size() - 1);
  ASSERT_TRUE(std::regex_match(gpu_line, m, device)) << gpu;
  EXPECT_EQ(m[5], "3");
  EXPECT_EQ(m[6], "0000:19:00");
  EXPECT_EQ(m[7], "NVIDIA H200");
  const std::vector<std::string> lines = lines_of(header);
  ASSERT_GE(lines.size(), 3u);
  const std::string& groups = lines[lines.size() - 3];
  EXPECT_LT(groups.find("out-of-place"), groups.find("in-place")) << groups;
  const std::regex columns(
      R"(^#\s+size\s+count\s+type\s+redop\s+root\s+time\s+algbw\s+busbw\s+#wrong\s+time\s+algbw\s+busbw\s+#wrong$)");
  EXPECT_TRUE(std::regex_match(lines[lines.size() - 2], columns)) << lines[lines.size() - 2];
  EXPECT_NE(lines.back().find("(B)"), std::string::npos);
  for (const std::string& line : lines) {
    EXPECT_EQ(line.front(), '#') << line;  // scripts skip '#' lines and parse the rest as data
    EXPECT_NE(line.back(), ' ') << line;
  }
}

TEST(NcclTestsFormat, StepSaysFactorBytesOrList) {
  NcclTestsRunInfo run;
  run.sizes = {1024, 4096, 16384};
  EXPECT_NE(format_nccl_tests_header(run, {}).find("step: 4(factor)"), std::string::npos);
  run.sizes = {1000, 2000, 3000};
  EXPECT_NE(format_nccl_tests_header(run, {}).find("step: 1000(bytes)"), std::string::npos);
  run.sizes = {1024, 3000, 1048576};
  EXPECT_NE(format_nccl_tests_header(run, {}).find("step: 0(list)"), std::string::npos);
}

TEST(NcclTestsFormat, EveryRowParsesIntoThirteenFieldsWithTheRightValues) {
  // Small, medium and large values: every width keeps plain decimals (no exponents) the regex reads.
  const std::vector<NcclTestsRow> rows = {row(1024, 12.345, 11.5, 0.0829, 0.089),
                                          row(16777216, 1234.5, 1200.25, 27.2, 27.95),
                                          row(int64_t{1} << 32, 123456789.0, 23456.7, 4567.8, 183104.2)};
  for (const NcclTestsRow& r : rows) {
    const std::string text = format_nccl_tests_row(r);
    ASSERT_EQ(text.back(), '\n');
    const std::string line = text.substr(0, text.size() - 1);
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, kDataRow)) << line;
    EXPECT_EQ(std::stoll(m[1]), r.bytes);
    EXPECT_EQ(std::stoll(m[2]), r.count);
    EXPECT_EQ(m[3], "float");
    EXPECT_EQ(m[4], "sum");
    EXPECT_EQ(m[5], "-1");
    EXPECT_NEAR(std::stod(m[6]), r.out_of_place.time_us, 0.006 + 1e-6 * r.out_of_place.time_us) << line;
    EXPECT_NEAR(std::stod(m[8]), r.out_of_place.busbw_GBps, 0.51) << line;
    EXPECT_NEAR(std::stod(m[10]), r.in_place.time_us, 0.51) << line;
    EXPECT_NEAR(std::stod(m[12]), r.in_place.busbw_GBps, 0.51) << line;
    EXPECT_EQ(std::stoll(m[13]), r.in_place.wrong);
    EXPECT_EQ(line.find('e'), std::string::npos) << line;
  }
  // Aligned under the header: the small row's fields end where nccl-tests' widths put them.
  EXPECT_EQ(format_nccl_tests_row(rows[0]),
            "        1024           256     float     sum      -1    12.35    0.08    0.08       0    11.50    0.09"
            "    0.09       0\n");
}

TEST(NcclTestsFormat, FooterMatchesTheAvgBusBandwidthRegexAndAveragesBothColumns) {
  NcclTestsRunInfo run;
  const std::vector<NcclTestsRow> rows = {row(1024, 10, 10, 1.0, 2.0), row(2048, 10, 10, 3.0, 4.0)};
  EXPECT_DOUBLE_EQ(nccl_tests_avg_busbw(rows), 2.5);  // nccl-tests: the mean over out-of-place and in-place rows
  const std::string footer = format_nccl_tests_footer(run, rows);
  EXPECT_NE(footer.find("# Out of bounds values : 0 OK\n"), std::string::npos) << footer;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(footer, m, kAvgBusbw)) << footer;
  EXPECT_DOUBLE_EQ(std::stod(m[1]), 2.5);
  EXPECT_NE(footer.find("# Collective test concluded: ddpx allreduce\n"), std::string::npos) << footer;

  const std::vector<NcclTestsRow> wrong = {row(1024, 10, 10, 1.0, 2.0, 7)};
  EXPECT_NE(format_nccl_tests_footer(run, wrong).find("# Out of bounds values : 1 FAILED\n"), std::string::npos);
  EXPECT_DOUBLE_EQ(nccl_tests_avg_busbw({}), 0);
}

TEST(NcclTestsFormat, RankTimesCombineAsNcclTestsDashA) {
  const std::vector<double> times = {4.0, 1.0, 7.0};
  EXPECT_DOUBLE_EQ(aggregate_rank_times(times, parse_rank_time_aggregate(0)), 4.0);  // rank 0
  EXPECT_DOUBLE_EQ(aggregate_rank_times(times, parse_rank_time_aggregate(1)), 4.0);  // mean (the default)
  EXPECT_DOUBLE_EQ(aggregate_rank_times(times, parse_rank_time_aggregate(2)), 1.0);  // min
  EXPECT_DOUBLE_EQ(aggregate_rank_times(times, parse_rank_time_aggregate(3)), 7.0);  // max
  EXPECT_DOUBLE_EQ(aggregate_rank_times({2.0, 6.0}, RankTimeAggregate::mean), 4.0);
  EXPECT_EQ(NcclTestsRunInfo{}.aggregate, RankTimeAggregate::mean);
  try {
    parse_rank_time_aggregate(4);
    FAIL() << "--average 4 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--average 4"), std::string::npos) << e.what();
  }
  // No per-rank times is the caller's bug, not the user's: an internal error.
  EXPECT_THROW(aggregate_rank_times({}, RankTimeAggregate::mean), InternalError);
}

}  // namespace
}  // namespace ddpx::cli
