// predict/measured_step: a one-rank report read into phases, per-tensor ready times (measured, interpolated,
// or uniform without buckets), the hook's own-cost fit, re-cut buckets, and every refusal of a report that does not
// fit (more ranks, accumulation, no gradient tensors, buckets that disagree with the tensors).
#include <gtest/gtest.h>

#include "error_expect.hpp"
#include "predict/measured_step.hpp"
#include "synthetic_report.hpp"

namespace ddpx::predict {
namespace {

using testing::synthetic_one_rank_report;

TEST(MeasuredStep, PhasesReadyTimesAndOwnCostFromBuckets) {
  const MeasuredStep m = measure_step(synthetic_one_rank_report(true), "r.json");
  EXPECT_DOUBLE_EQ(m.forward_ms, 10);
  EXPECT_DOUBLE_EQ(m.backward_ms, 40);
  EXPECT_DOUBLE_EQ(m.other_ms, 1);
  EXPECT_DOUBLE_EQ(m.compute_ms(), 56);
  EXPECT_TRUE(m.ready_times_measured);
  ASSERT_EQ(m.tensor_ready_ms.size(), 4u);
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(m.tensor_ready_ms[k], 10.0 * (k + 1), 1e-9) << k;
  EXPECT_TRUE(m.own.measured);
  EXPECT_NEAR(m.own.per_element_ms, 0.01, 1e-12);
  EXPECT_NEAR(m.own.fixed_ms, 0, 1e-9);
  EXPECT_EQ(m.measured_buckets, 4);
}

TEST(MeasuredStep, WithoutBucketsBackwardIsTakenAsUniform) {
  RunReport report = synthetic_one_rank_report(false);
  for (StepRecord& s : report.ranks[0].steps) s.phases.backward_ms = 80, s.phases.total_ms = 96;
  const MeasuredStep m = measure_step(report, "r.json");
  EXPECT_FALSE(m.ready_times_measured);
  EXPECT_FALSE(m.own.measured);
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(m.tensor_ready_ms[k], 20.0 * (k + 1), 1e-9) << k;
}

TEST(MeasuredStep, ReadyTimesInsideABucketAreInterpolated) {
  // One bucket of all four tensors (cap 1 MiB): only its end is measured, at backward's end.
  RunReport report = synthetic_one_rank_report(true);
  report.config.bucket_mb = report.config.first_bucket_mb = 1;
  for (StepRecord& s : report.ranks[0].steps) {
    BucketRecord b = s.buckets.back();
    b.index = 0;
    b.elements = 484;
    s.buckets = {b};
  }
  const MeasuredStep m = measure_step(report, "r.json");
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(m.tensor_ready_ms[k], 10.0 * (k + 1), 1e-9) << k;
}

TEST(MeasuredStep, RecutBucketsFollowTheCap) {
  const MeasuredStep m = measure_step(synthetic_one_rank_report(true), "r.json");
  // 0.0008 MiB = 838 bytes: two 400-byte tensors per bucket after a first bucket of one.
  const BucketPlan plan = bucket_plan_of(m.tensors, 0.0008, 0.0004);
  std::vector<std::pair<size_t, size_t>> ranges;
  for (const Bucket& b : plan.buckets()) ranges.emplace_back(b.first_tensor, b.end_tensor);
  EXPECT_EQ(ranges, (std::vector<std::pair<size_t, size_t>>{{0, 1}, {1, 3}, {3, 4}}));
  EXPECT_EQ(plan[1].numel(), 256u);
  EXPECT_EQ(plan[2].numel(), 100u);
  EXPECT_EQ(bucket_plan_of(m.tensors, 2000, 1).size(), 1u);
}

TEST(MeasuredStep, ReportsThatDoNotFitAreRefused) {
  RunReport two = synthetic_one_rank_report(true);
  two.config.world = 2;
  testing::expect_error([&] { (void)measure_step(two, "two.json"); }, {"two.json", "2 ranks", "--ddp"});
  RunReport accum = synthetic_one_rank_report(true);
  accum.config.grad_accum = 4;
  testing::expect_error([&] { (void)measure_step(accum, "acc.json"); }, {"acc.json", "grad_accum"});
  RunReport old = synthetic_one_rank_report(true);
  old.config.gradient_tensors.clear();
  testing::expect_error([&] { (void)measure_step(old, "old.json"); },
                        {"old.json", "missing field config.gradient_tensors", "record it again"});
  RunReport disagree = synthetic_one_rank_report(true);
  disagree.config.bucket_mb = 1;
  testing::expect_error([&] { (void)measure_step(disagree, "d.json"); }, {"d.json", "4 buckets", "disagree"});
  RunReport hook = synthetic_one_rank_report(true, "zip");
  testing::expect_error([&] { (void)measure_step(hook, "h.json"); }, {"h.json", "config.hook", "zip"});
}

}  // namespace
}  // namespace ddpx::predict
