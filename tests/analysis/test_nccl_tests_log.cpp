// nccl-tests' own output (all_reduce_perf's text and its -J JSON) read as a peak table by load_peak_table, the
// reader behind `ddpx report --peak` and `ddpx predict --link`; other collectives and rows that do not read are
// refused naming the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "analysis/comm_stats.hpp"
#include "analysis/nccl_tests_log.hpp"
#include "recorded_data.hpp"

namespace ddpx {
namespace {

void expect_the_recorded_table(const PeakTable& peak) {
  EXPECT_EQ(peak.world(), 2);  // two "#  Rank" device lines, or two JSON devices
  EXPECT_EQ(peak.collective(), Collective::all_reduce);
  EXPECT_EQ(peak.link(), "nccl-tests");
  ASSERT_EQ(peak.points().size(), 4u);
  // The in-place column, which is what DDP's buckets do.
  EXPECT_EQ(peak.points()[0].bytes, 1048576);
  EXPECT_DOUBLE_EQ(peak.points()[0].busbw_GBps, 102.7);
  EXPECT_EQ(peak.points()[3].bytes, 1073741824);
  EXPECT_DOUBLE_EQ(peak.points()[3].busbw_GBps, 330.0);
  EXPECT_NEAR(peak.busbw_at(16777216), 219.6, 1e-9);
}

TEST(NcclTestsLog, AllReducePerfTextIsAPeakTable) {
  expect_the_recorded_table(load_peak_table(testing::recorded_data("nccl_tests_all_reduce_2xh200.txt")));
}

TEST(NcclTestsLog, AllReducePerfJsonIsAPeakTable) {
  expect_the_recorded_table(load_peak_table(testing::recorded_data("nccl_tests_all_reduce_2xh200.json")));
}

TEST(NcclTestsLog, OtherOutputIsLeftToTheCallerOrRefused) {
  EXPECT_FALSE(peak_table_from_nccl_tests(R"({"collective": "all_reduce", "points": []})", "x").has_value());
  EXPECT_FALSE(peak_table_from_nccl_tests("step 10 | loss 2.3\n", "x").has_value());
  std::ifstream in(testing::recorded_data("nccl_tests_all_reduce_2xh200.txt"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string gather = text;
  for (size_t at; (at = gather.find("all_reduce_perf")) != std::string::npos;) gather.replace(at, 15, "all_gather_perf");
  try {
    (void)peak_table_from_nccl_tests(gather, "ag.txt");
    FAIL() << "all_gather_perf output was taken for an all-reduce table";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ag.txt: nccl-tests output of 'all_gather_perf'"), std::string::npos)
        << e.what();
  }
  const std::string one_rank = text.substr(0, text.find("#  Rank  1")) + text.substr(text.find("#\n#  "));
  try {
    (void)peak_table_from_nccl_tests(one_rank, "one.txt");
    FAIL() << "a one-rank log gave a link";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("one.txt: nccl-tests output of 1 rank(s)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ddpx
