// DDP's cost against the calibrated plain step (analysis/ddp_cost.hpp) on hand-made records: the parts add up to
// measured - plain on every report, hidden cost is attributed (hook work under compute, the rest) rather than
// dropped, an uncalibrated or plain run has no cost at all (never a 0), and the figures survive the report's JSON.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "analysis/ddp_cost.hpp"
#include "analysis/step_breakdown.hpp"

namespace ddpx {
namespace {

StepRecord ddp_step(int64_t number, double total, double exposed, double bucket_start, double bucket_end) {
  StepRecord step;
  step.step = number;
  step.phases = PhaseTimes{0.1, 0, 2, 5, bucket_end - bucket_start, exposed, 1, total};
  BucketRecord bucket;
  bucket.bytes = 4;
  bucket.launch_ms = bucket_start;
  bucket.start_ms = bucket_start;
  bucket.end_ms = bucket_end;
  step.buckets.push_back(bucket);
  return step;
}

CalibrationRecord calibration(int64_t number, double plain_total) {
  CalibrationRecord record;
  record.step = number;
  record.plain = PhaseTimes{0.1, 0, 2, 4.5, 0, 0, 1, plain_total};
  record.reduce_ms = 0.4;
  return record;
}

RunReport report_of(int world) {
  RunReport report;
  report.config.ddp = true;
  report.config.world = world;
  for (int r = 0; r < world; ++r) {
    RankRun run;
    run.info.rank = r;
    run.info.world_size = world;
    // Totals 9.0 / 9.4 / 9.2 (median 9.2); exposed 0.5 / 0.3 / 0.4 (median 0.4); hook work: bucket unions 1.0 /
    // 1.0 / 1.2 minus the exposed part = 0.5 / 0.7 / 0.8 (median 0.7). Rank r adds r ms to everything it measures.
    run.steps = {ddp_step(10, 9.0 + r, 0.5, 6, 7), ddp_step(11, 9.4 + r, 0.3, 6, 7), ddp_step(12, 9.2 + r, 0.4, 6, 7.2)};
    run.calibration = {calibration(3, 8.1 + r), calibration(4, 7.9 + r)};  // median 8.0
    report.ranks.push_back(run);
  }
  return report;
}

TEST(DdpCost, PartsAddUpToTheMeasuredStepMinusTheCalibratedPlainStep) {
  for (int world : {1, 2, 3}) {
    const std::optional<DdpCost> cost = ddp_cost_of(report_of(world));
    ASSERT_TRUE(cost.has_value());
    const double shift = world == 1 ? 0 : (world - 1) / 2.0;  // the median rank's offset
    EXPECT_EQ(cost->calibration_steps, 2);
    EXPECT_DOUBLE_EQ(cost->measured_step_ms, 9.2 + shift);
    EXPECT_DOUBLE_EQ(cost->plain_step_ms, 8.0 + shift);
    EXPECT_DOUBLE_EQ(cost->cost_ms, cost->measured_step_ms - cost->plain_step_ms);
    EXPECT_DOUBLE_EQ(cost->exposed_comm_ms, 0.4);
    EXPECT_NEAR(cost->hook_work_ms, 0.7, 1e-12);
    EXPECT_NEAR(cost->exposed_comm_ms + cost->hook_work_ms + cost->other_ms, cost->cost_ms, 1e-12);
    EXPECT_NEAR(cost->other_ms, 1.2 - 0.4 - 0.7, 1e-12);
    EXPECT_NEAR(cost->fraction(), cost->cost_ms / cost->measured_step_ms, 1e-15);
  }
}

TEST(DdpCost, HiddenCostIsNotZeroWhenNothingIsExposed) {
  RunReport report = report_of(1);
  for (StepRecord& step : report.ranks.front().steps) step.phases.exposed_comm_ms = 0;
  const DdpCost cost = *ddp_cost_of(report);
  EXPECT_DOUBLE_EQ(cost.exposed_comm_ms, 0.0);
  EXPECT_GT(cost.cost_ms, 1.0);
  EXPECT_NEAR(cost.hook_work_ms, 1.0, 1e-12);  // the whole bucket interval ran under compute
  EXPECT_NEAR(cost.hook_work_ms + cost.other_ms, cost.cost_ms, 1e-12);
}

TEST(DdpCost, WithoutCalibrationOrWithoutDdpThereIsNoCost) {
  RunReport uncalibrated = report_of(2);
  uncalibrated.ranks.back().calibration.clear();  // one rank without: no run figure
  EXPECT_FALSE(ddp_cost_of(uncalibrated).has_value());
  RunReport plain = report_of(1);
  plain.config.ddp = false;
  EXPECT_FALSE(ddp_cost_of(plain).has_value());
  // The breakdown says the hidden part is unknown instead of printing a 0.
  RunReport one = report_of(1);
  one.ranks.front().calibration.clear();
  const std::string table = format_breakdown(summarize_steps(one));
  EXPECT_NE(table.find("# DDP cost: not calibrated"), std::string::npos) << table;
}

TEST(DdpCost, BreakdownPrintsThePartsAndCarriesThemInJson) {
  const StepBreakdown b = summarize_steps(report_of(1));
  ASSERT_TRUE(b.ddp_cost.has_value());
  const std::string table = format_breakdown(b);
  EXPECT_NE(table.find("# DDP cost: 1.200 ms (13.0% of the step) = exposed comm 0.400 + compute slowed by DDP's "
                       "work beside it 0.800\n#   the hooks ran 0.700 ms under compute"),
            std::string::npos)
      << table;
  EXPECT_DOUBLE_EQ(b.ddp_cost->hidden_ms(), b.ddp_cost->cost_ms - b.ddp_cost->exposed_comm_ms);
  EXPECT_NE(table.find("measured DDP step 9.200 ms - calibrated plain step 8.000 ms (2 calibration steps per rank"),
            std::string::npos)
      << table;
  const nlohmann::json j = b;
  EXPECT_DOUBLE_EQ(j.at("ddp_cost").at("plain_step_ms").get<double>(), 8.0);
}

// A CUDA run times its buckets at progress lines only: with none in the measured steps, the hooks' time under
// compute is unknown and is said so, never printed as 0 ms (it was: "the hooks ran 0.000 ms under compute").
TEST(DdpCost, HookTimeUnsampledIsSaidUnknownNotZero) {
  RunReport report = report_of(2);
  for (StepRecord& step : report.ranks.back().steps) step.buckets.clear();  // one rank sampled none
  const std::optional<DdpCost> cost = ddp_cost_of(report);
  ASSERT_TRUE(cost.has_value());
  EXPECT_FALSE(cost->hook_work_sampled);
  EXPECT_NEAR(cost->exposed_comm_ms + cost->hook_work_ms + cost->other_ms, cost->cost_ms, 1e-12);
  const std::string table = format_breakdown(summarize_steps(report));
  EXPECT_EQ(table.find("the hooks ran"), std::string::npos) << table;
  EXPECT_NE(table.find("the hooks' time under compute was not sampled"), std::string::npos) << table;
  EXPECT_NE(table.find("--log-every"), std::string::npos) << table;
  EXPECT_TRUE(ddp_cost_of(report_of(2))->hook_work_sampled);
  // Carried through the report's JSON; a report written before the field reads as sampled.
  nlohmann::json j = *cost;
  EXPECT_FALSE(j.get<DdpCost>().hook_work_sampled);
  j.erase("hook_work_sampled");
  EXPECT_TRUE(j.get<DdpCost>().hook_work_sampled);
}

TEST(DdpCost, CalibrationRecordsAndTheCostRoundTripThroughTheReportJson) {
  RunReport report = report_of(2);
  report.ddp_cost = ddp_cost_of(report);
  const RunReport back = nlohmann::json(report).get<RunReport>();
  EXPECT_EQ(back, report);
  // Old reports have neither field.
  nlohmann::json old = report;
  old.erase("ddp_cost");
  for (auto& rank : old.at("ranks")) rank.erase("calibration");
  const RunReport old_back = old.get<RunReport>();
  EXPECT_FALSE(old_back.ddp_cost.has_value());
  EXPECT_TRUE(old_back.ranks.front().calibration.empty());
  // A damaged cost is refused, naming the field.
  nlohmann::json bad = report;
  bad["ddp_cost"]["plain_step_ms"] = -1;
  EXPECT_THROW(bad.get<RunReport>(), Error);
}

}  // namespace
}  // namespace ddpx
