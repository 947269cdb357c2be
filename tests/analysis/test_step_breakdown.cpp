// Step breakdown: medians, spreads, the straggler and throughput from hand-made records with known answers.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "analysis/step_breakdown.hpp"
#include "recorded_data.hpp"

namespace ddpx {
namespace {

StepRecord step(int64_t number, double forward, double exposed, double total) {
  StepRecord s;
  s.step = number;
  s.phases.data_wait_ms = 1;
  s.phases.forward_ms = forward;
  s.phases.backward_ms = 2 * forward;
  s.phases.comm_ms = 5;
  s.phases.exposed_comm_ms = exposed;
  s.phases.optimizer_ms = 1;
  s.phases.total_ms = total;
  return s;
}

RunReport two_rank_report() {
  RunReport report;
  report.config.world = 2;
  report.config.batch = 32;
  report.config.grad_accum = 2;
  RankRun rank0{RankInfo{0, "GPU-A", "fp32", 2, ""}, {}};
  // serial parts = 1 + f + 2f + exposed + 1
  rank0.steps = {step(1, 10, 2, 34), step(2, 12, 1, 40), step(3, 11, 3, 38)};
  RankRun rank1{RankInfo{1, "GPU-B", "fp32", 2, ""}, {}};
  rank1.steps = {step(1, 12, 2, 40), step(2, 13, 2, 43), step(3, 11, 2, 37), step(4, 14, 2, 46)};
  report.ranks = {rank0, rank1};
  return report;
}

TEST(StepBreakdown, MedianOfOddAndEvenCounts) {
  EXPECT_DOUBLE_EQ(median_of({3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(median_of({4, 1, 3, 2}), 2.5);
  EXPECT_THROW(median_of({}), Error);
  const Spread s = spread_of({5, 1, 9, 3});
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.median, 4);
  EXPECT_DOUBLE_EQ(s.max, 9);
}

TEST(StepBreakdown, PerRankAndAcrossRankSpreads) {
  const StepBreakdown b = summarize_steps(two_rank_report());
  ASSERT_EQ(b.ranks.size(), 2u);
  EXPECT_EQ(b.ranks[0].steps, 3u);
  EXPECT_DOUBLE_EQ(b.ranks[0][Phase::forward].median, 11);
  EXPECT_DOUBLE_EQ(b.ranks[0][Phase::forward].min, 10);
  EXPECT_DOUBLE_EQ(b.ranks[0][Phase::forward].max, 12);
  EXPECT_DOUBLE_EQ(b.ranks[0][Phase::total].median, 38);
  EXPECT_DOUBLE_EQ(b.ranks[1][Phase::total].median, 41.5);  // (40 + 43) / 2
  EXPECT_DOUBLE_EQ(b.ranks[1][Phase::forward].median, 12.5);
  // Across ranks: min / median / max of the per-rank medians.
  EXPECT_DOUBLE_EQ(b[Phase::total].min, 38);
  EXPECT_DOUBLE_EQ(b[Phase::total].median, 39.75);
  EXPECT_DOUBLE_EQ(b[Phase::total].max, 41.5);
  EXPECT_DOUBLE_EQ(b[Phase::backward].median, (22 + 25) / 2.0);
}

TEST(StepBreakdown, CommIsSummarizedOverTheStepsThatTimedTheirBuckets) {
  // CUDA runs time buckets only at progress lines; the other steps carry the exposed part as a stand-in.
  RunReport report = two_rank_report();
  for (RankRun& rank : report.ranks)
    for (StepRecord& s : rank.steps) s.phases.comm_ms = s.phases.exposed_comm_ms;
  StepRecord& sampled = report.ranks[0].steps[1];
  sampled.phases.comm_ms = 9;
  sampled.buckets.push_back(BucketRecord{});
  const StepBreakdown b = summarize_steps(report);
  EXPECT_DOUBLE_EQ(b.ranks[0][Phase::comm].median, 9);  // the one timed step, not the stand-ins
  EXPECT_DOUBLE_EQ(b.ranks[1][Phase::comm].median, 2);  // no timed step: every step counts
}

TEST(StepBreakdown, StragglerSetsThePace) {
  const StepBreakdown b = summarize_steps(two_rank_report());
  EXPECT_EQ(b.straggler_rank, 1);
  EXPECT_EQ(b.straggler, "rank 1 (GPU-B)");
  EXPECT_DOUBLE_EQ(b.step_ms, 41.5);
  EXPECT_NEAR(b.steps_per_s, 1000.0 / 41.5, 1e-12);
  EXPECT_NEAR(b.images_per_s, 1000.0 / 41.5 * 32 * 2 * 2, 1e-9);  // batch * grad_accum * world
}

TEST(StepBreakdown, PartsAddUpWithinFivePercent) {
  // Rank 0 step 1: 1 + 10 + 20 + 2 + 1 = 34 = total: exact. Rank 1 step 4: 1 + 14 + 28 + 2 + 1 = 46: exact.
  StepBreakdown b = summarize_steps(two_rank_report());
  EXPECT_TRUE(b.parts_add_up);
  EXPECT_NEAR(b.parts_mismatch, 0.0, 1e-12);
  RunReport report = two_rank_report();
  for (StepRecord& s : report.ranks[1].steps) s.phases.total_ms *= 1.10;  // 10% unattributed on rank 1
  b = summarize_steps(report);
  EXPECT_FALSE(b.parts_add_up);
  EXPECT_NEAR(b.parts_mismatch, 0.1 / 1.1, 1e-9);
}

// Phases slow in different steps: each step's parts add up to its total, the medians leave a large "other". The
// table says it is a gap of medians, not unmeasured time (it printed "other 28.6%" above "parts add up: yes").
TEST(StepBreakdown, AnOtherThatIsAGapOfMediansIsSaidToBeOne) {
  RunReport report;
  report.config.world = 1;
  RankRun rank0{RankInfo{0, "CPU", "fp32", 1, ""}, {}};
  for (int s = 0; s < 3; ++s) {
    StepRecord step;
    step.step = s + 1;
    step.phases.data_wait_ms = s == 0 ? 10 : 0;  // each phase is slow in one step only: every median is 0
    step.phases.forward_ms = s == 1 ? 10 : 0;
    step.phases.backward_ms = s == 2 ? 10 : 0;
    step.phases.total_ms = 10;
    rank0.steps.push_back(step);
  }
  report.ranks = {rank0};
  const StepBreakdown b = summarize_steps(report);
  EXPECT_TRUE(b.parts_add_up);
  const std::string table = format_breakdown(b);
  EXPECT_NE(table.find("medians do not add up; each step's parts do"), std::string::npos) << table;
  EXPECT_EQ(format_breakdown(summarize_steps(two_rank_report())).find("medians do not add up"), std::string::npos);
}

TEST(StepBreakdown, TableNamesEveryPhaseRankAndSummary) {
  const std::string table = format_breakdown(summarize_steps(two_rank_report()));
  EXPECT_EQ(table.rfind("# ddpx step breakdown: vit_l_32, batch 32 per rank, fp32, 2 ranks", 0), 0u) << table;
  // A run whose weight GEMMs wrote bf16 (--weight-grads auto in bf16) says so beside its precision.
  RunReport bf16 = two_rank_report();
  bf16.config.precision = "bf16", bf16.config.weight_grads = "bf16";
  const std::string bf16_table = format_breakdown(summarize_steps(bf16));
  EXPECT_EQ(bf16_table.rfind("# ddpx step breakdown: vit_l_32, batch 32 per rank, bf16 (bf16 weight gradients), 2 "
                             "ranks", 0), 0u) << bf16_table;
  for (Phase phase : kAllPhases) EXPECT_NE(table.find(std::string(phase_name(phase))), std::string::npos) << table;
  EXPECT_NE(table.find("GPU-A"), std::string::npos);
  EXPECT_NE(table.find("# straggler: rank 1 (GPU-B), median step 41.500 ms"), std::string::npos) << table;
  EXPECT_NE(table.find("# steps/s: 24.096"), std::string::npos) << table;
  EXPECT_NE(table.find("from the straggler's median step"), std::string::npos) << table;  // which throughput it is
  EXPECT_NE(table.find("parts add up: yes"), std::string::npos) << table;
}

TEST(StepBreakdown, JsonCarriesTheSummary) {
  const nlohmann::json j = summarize_steps(two_rank_report());
  EXPECT_EQ(j["straggler_rank"], 1);
  EXPECT_DOUBLE_EQ(j["across_ranks"]["total_ms"]["median"].get<double>(), 39.75);
  EXPECT_DOUBLE_EQ(j["ranks"][1]["phases"]["forward_ms"]["median"].get<double>(), 12.5);
  EXPECT_EQ(j["config"]["world"], 2);
}

TEST(StepBreakdown, RecordedReportLoadsAndSummarizes) {
  const RunReport report = load_run_report(testing::recorded_data("comm_bound_shm.json"));
  const StepBreakdown b = summarize_steps(report);
  EXPECT_EQ(b.ranks.size(), 2u);
  EXPECT_TRUE(b.parts_add_up);
  EXPECT_NEAR(b.step_ms, 50.964, 0.001);  // rank 0's median total in the file
}

TEST(StepBreakdown, RejectsEmptyRanksAndZeroTotals) {
  RunReport report = two_rank_report();
  report.ranks[0].steps.clear();
  EXPECT_THROW(summarize_steps(report), Error);
  report = two_rank_report();
  report.ranks[1].steps[2].phases.total_ms = 0;
  EXPECT_THROW(summarize_steps(report), Error);
}

}  // namespace
}  // namespace ddpx

namespace ddpx {
namespace {

// Issue 40: "compute slowed by DDP's work beside it -0.01" read as a speed-up; a negative slowdown is the noise.
TEST(StepBreakdown, ANegativeSlowdownIsSaidToBeNoise) {
  DdpCost cost;
  cost.measured_step_ms = 10.00;
  cost.plain_step_ms = 9.90;
  cost.cost_ms = 0.10;
  cost.exposed_comm_ms = 0.11;  // hidden part -0.01
  cost.calibration_steps = 3;
  const std::string text = format_ddp_cost(cost);
  EXPECT_NE(text.find("compute slowed by DDP's work beside it -0.010 (none measurable: the steps' noise)"),
            std::string::npos) << text;
  cost.exposed_comm_ms = 0.05;
  EXPECT_EQ(format_ddp_cost(cost).find("noise"), std::string::npos) << format_ddp_cost(cost);
}

}  // namespace
}  // namespace ddpx
