// Communication statistics: nccl-tests' bus factors, bandwidth arithmetic, peak interpolation, "% of peak".
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "analysis/comm_stats.hpp"
#include "recorded_data.hpp"

namespace ddpx {
namespace {

TEST(CommStats, BusFactorsMatchNcclTests) {
  EXPECT_DOUBLE_EQ(bus_factor(Collective::all_reduce, 1), 0.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::all_reduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::all_reduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::all_gather, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::reduce_scatter, 8), 0.875);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::broadcast, 8), 1.0);
  EXPECT_THROW(bus_factor(Collective::all_reduce, 0), Error);
}

TEST(CommStats, BandwidthArithmetic) {
  EXPECT_DOUBLE_EQ(algbw_GBps(1'000'000'000, 10.0), 100.0);  // 1 GB in 10 ms
  EXPECT_DOUBLE_EQ(busbw_GBps(Collective::all_reduce, 8, 1'000'000'000, 10.0), 175.0);
  EXPECT_DOUBLE_EQ(algbw_GBps(1000, 0.0), 0.0);
  // The anchor: 1.22 GB over NVLink in 3.9 ms on 2 GPUs is about 313 GB/s busbw (anchors.md rounds to 330 at the
  // best size).
  EXPECT_NEAR(busbw_GBps(Collective::all_reduce, 2, 1'222'000'000, 3.9), 313.3, 0.1);
}

TEST(CommStats, ParsesCollectiveNames) {
  EXPECT_EQ(parse_collective("allreduce"), Collective::all_reduce);
  EXPECT_EQ(parse_collective("all_gather"), Collective::all_gather);
  try {
    parse_collective("alltoall");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'alltoall'"), std::string::npos);
  }
}

TEST(CommStats, PeakInterpolatesInLogSizeAndClamps) {
  const PeakTable peak = load_peak_table(testing::recorded_data("peak_nvlink_2xh200.json"));
  EXPECT_EQ(peak.world(), 2);
  EXPECT_EQ(peak.link(), "NV18");
  EXPECT_DOUBLE_EQ(peak.busbw_at(1 << 20), 20.0);
  EXPECT_DOUBLE_EQ(peak.busbw_at(1 << 24), 218.0);
  EXPECT_DOUBLE_EQ(peak.busbw_at(1 << 22), 119.0);  // halfway in log2 between 1 MiB and 16 MiB
  EXPECT_DOUBLE_EQ(peak.busbw_at(1000), 20.0);      // below the table: clamped
  EXPECT_DOUBLE_EQ(peak.busbw_at(int64_t{5} << 30), 330.0);
  EXPECT_THROW(PeakTable().busbw_at(1), Error);
  EXPECT_THROW(PeakTable({{100, 1.0}, {100, 2.0}}), Error);  // two points of one size
  EXPECT_EQ(nlohmann::json(peak).get<PeakTable>().points(), peak.points());
}

TEST(CommStats, StepStatsPerBucketAndPerStep) {
  StepRecord step;
  BucketRecord a;
  a.index = 0;
  a.bytes = 1 << 24;  // 16 MiB at 109 GB/s busbw: half of the 218 GB/s peak
  a.launch_ms = 1.0;
  a.start_ms = 1.0;
  a.end_ms = 1.0 + static_cast<double>(a.bytes) / 109e9 * 1e3;
  BucketRecord b = a;
  b.index = 1;
  b.launch_ms = 5.0;
  b.start_ms = 5.0;
  b.end_ms = 5.0 + static_cast<double>(b.bytes) / 218e9 * 1e3;  // at peak
  step.buckets = {a, b};
  const PeakTable peak = load_peak_table(testing::recorded_data("peak_nvlink_2xh200.json"));
  const StepCommStats s = step_comm_stats(step, 2, &peak);
  ASSERT_EQ(s.buckets.size(), 2u);
  EXPECT_NEAR(s.buckets[0].busbw_GBps, 109.0, 1e-9);
  EXPECT_NEAR(*s.buckets[0].pct_of_peak, 50.0, 1e-9);
  EXPECT_NEAR(*s.buckets[1].pct_of_peak, 100.0, 1e-9);
  EXPECT_EQ(s.bytes, int64_t{2} << 24);
  EXPECT_EQ(s.wire_bytes_per_rank, int64_t{2} << 24);  // factor 1 at world 2
  EXPECT_NEAR(s.window_ms, b.end_ms - 1.0, 1e-12);
  // Ideal time 2 * t_peak over actual t_peak + 2 t_peak: 2/3.
  EXPECT_NEAR(*s.pct_of_peak, 200.0 / 3.0, 1e-9);
  const std::string table = format_comm_stats(s, 2, "NV18");
  EXPECT_NE(table.find("busbw"), std::string::npos);
  EXPECT_NE(table.find("66.7% of the measured peak"), std::string::npos) << table;
  EXPECT_FALSE(step_comm_stats(step, 2).pct_of_peak.has_value());  // no peak table: no percentage
  EXPECT_EQ(table.find("one rank"), std::string::npos);
  const StepCommStats one = step_comm_stats(step, 1);
  EXPECT_EQ(one.busbw_GBps, 0.0);  // bus factor 0: nothing crosses a link
  EXPECT_NE(format_comm_stats(one, 1, "").find("one rank: nothing crosses a link"), std::string::npos);
}

TEST(CommStats, RecordedShmRunIsNearItsPeak) {
  const RunReport report = load_run_report(testing::recorded_data("comm_bound_shm.json"));
  const PeakTable peak = load_peak_table(testing::recorded_data("peak_shm_2xh200.json"));
  const StepCommStats s = run_comm_stats(report, &peak);
  EXPECT_EQ(s.buckets.size(), 13u);
  EXPECT_EQ(s.bytes, 13 * (1'222'000'000 / 13));
  // Simulated at 28.5 GB/s plus 0.03 ms per 3.3 ms bucket; the table's peak is 28.5 GB/s: 99.1% (+-0.5 for the
  // simulation's 1% jitter).
  ASSERT_TRUE(s.pct_of_peak.has_value());
  EXPECT_NEAR(*s.pct_of_peak, 99.1, 0.5);
  EXPECT_NEAR(s.busbw_GBps, 28.24, 0.1);
  const nlohmann::json j = s;
  EXPECT_EQ(j["buckets"].size(), 13u);
}

TEST(CommStats, StepsWithoutSampledBucketsAreSkipped) {
  // CUDA runs sample bucket timings only at progress lines: most steps carry none.
  RunReport report = load_run_report(testing::recorded_data("comm_bound_shm.json"));
  const StepCommStats all = run_comm_stats(report);
  for (RankRun& rank : report.ranks)
    for (size_t i = 0; i < rank.steps.size(); ++i)
      if (i % 3 != 2) rank.steps[i].buckets.clear();
  ASSERT_TRUE(report.ranks.front().steps.front().buckets.empty());
  EXPECT_EQ(bucket_layout(report).size(), 13u);
  const StepCommStats sampled = run_comm_stats(report);
  EXPECT_EQ(sampled.buckets.size(), 13u);
  EXPECT_EQ(sampled.bytes, all.bytes);
  EXPECT_NEAR(sampled.window_ms, all.window_ms, 0.05 * all.window_ms);  // medians of fewer steps
  for (RankRun& rank : report.ranks)
    for (StepRecord& step : rank.steps) step.buckets.clear();
  EXPECT_TRUE(bucket_layout(report).empty());
  EXPECT_TRUE(run_comm_stats(report).buckets.empty());
}

}  // namespace
}  // namespace ddpx
