// Calibration steps (train/calibration.hpp, Note [Calibration steps]).
// The schedule: the last warm-up steps, never the first step, after the CUDA graph captures, ending the engine's
// phase-time lag before the measured steps; fewer (with the reason and the flag to raise) when the warm-up is short.
// End to end on the CPU, through `ddpx train`: at one rank (allreduce and lossy hooks, accumulation, AdamW) and at
// two ranks, a calibrated run's weights equal an uncalibrated run's bit for bit, and its report carries the
// calibration steps and a DDP cost whose parts add up to the measured step minus the calibrated plain step, as
// computed from the report's own records. No timing is asserted, only consistency. On a GPU (skipped elsewhere)
// the same with CUDA graphs on and off.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "gpu_guard.hpp"
#include "io/param_safetensors.hpp"
#include "model/vit/vit_layout.hpp"
#include "model/vit/vit_config.hpp"
#include "analysis/step_breakdown.hpp"
#include "report/step_record.hpp"
#include "saved_weights.hpp"
#include "train/calibration.hpp"
#include "train/step_graphs.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using testing::saved_weights;
using testing::run_ddpx;

CalibrationRequest request(int64_t steps, int64_t warmup, int64_t lag = 0) {
  CalibrationRequest r;
  r.steps = steps;
  r.warmup = warmup;
  r.with_reducer = true;
  r.phase_time_lag = lag;
  return r;
}

TEST(CalibrationSchedule, TheLastWarmupStepsCalibrateOnTheCpu) {
  const CalibrationSchedule s = plan_calibration(request(2, 5));
  EXPECT_EQ(s.first_step, 4);
  EXPECT_EQ(s.last_step, 5);
  EXPECT_EQ(s.count(), 2);
  EXPECT_TRUE(s.shortfall.empty());
  EXPECT_FALSE(s.contains(3));
  EXPECT_TRUE(s.contains(4));
  EXPECT_FALSE(s.contains(6));
}

TEST(CalibrationSchedule, NothingWithoutAReducerOrWhenOff) {
  CalibrationRequest r = request(2, 5);
  r.with_reducer = false;
  EXPECT_EQ(plan_calibration(r).count(), 0);
  EXPECT_EQ(calibration_reserve(r), 0);
  EXPECT_EQ(plan_calibration(request(0, 5)).count(), 0);
  EXPECT_TRUE(plan_calibration(request(0, 5)).shortfall.empty());
}

TEST(CalibrationSchedule, TheFirstStepNeverCalibratesAndAShortWarmupSaysWhatToRaise) {
  const CalibrationSchedule two = plan_calibration(request(2, 2));
  EXPECT_EQ(two.count(), 1);
  EXPECT_EQ(two.first_step, 2);
  EXPECT_EQ(two.shortfall,
            "--warmup 2 holds 1 of --calibrate-steps 2 (calibration steps follow the first warm-up step and end 0 "
            "step(s) before the measured steps); raise --warmup by 1");
  EXPECT_EQ(plan_calibration(request(2, 1)).count(), 0);
  EXPECT_EQ(plan_calibration(request(2, 0)).count(), 0);
  EXPECT_FALSE(plan_calibration(request(2, 0)).shortfall.empty());
}

TEST(CalibrationSchedule, TheCudaLagKeepsAStepBetweenCalibrationAndMeasurement) {
  const CalibrationSchedule s = plan_calibration(request(2, 5, /*lag=*/1));
  EXPECT_EQ(s.first_step, 3);
  EXPECT_EQ(s.last_step, 4);  // step 5 is ordinary: measured step 6 reads its phase times
}

TEST(CalibrationSchedule, ResumedRunsCalibrateInTheirOwnWarmup) {
  CalibrationRequest r = request(3, 6);
  r.start_step = 40;
  const CalibrationSchedule s = plan_calibration(r);
  EXPECT_EQ(s.first_step, 44);
  EXPECT_EQ(s.last_step, 46);
}

TEST(CalibrationSchedule, CudaGraphCapturesMoveEarlierToLeaveRoomForCalibration) {
  StepGraphOptions o;
  o.optimizer.kind = OptimizerKind::sgd;
  o.warmup_steps = 8;
  CalibrationRequest r = request(2, 8, /*lag=*/1);
  const StepGraphSchedule graphs = plan_step_graphs(o, /*cuda_engine=*/true, 0, 1, /*timed_variants=*/true,
                                                    calibration_reserve(r));
  ASSERT_TRUE(graphs.enabled);
  EXPECT_EQ(graphs.first_step, 2);  // captures at steps 2..5 (without calibration: 5..8)
  EXPECT_EQ(graphs.captures, 4);
  r.earliest_step = graphs.first_step + graphs.captures;
  const CalibrationSchedule s = plan_calibration(r);
  EXPECT_EQ(s.first_step, 6);
  EXPECT_EQ(s.last_step, 7);
  // The default warm-up of 5 leaves no step after the four captures: none, and the run says why.
  o.warmup_steps = 5;
  r = request(2, 5, 1);
  const StepGraphSchedule short_graphs = plan_step_graphs(o, true, 0, 1, true, calibration_reserve(r));
  r.earliest_step = short_graphs.first_step + short_graphs.captures;
  const CalibrationSchedule none = plan_calibration(r);
  EXPECT_EQ(none.count(), 0);
  EXPECT_NE(none.shortfall.find("and the CUDA graph captures"), std::string::npos) << none.shortfall;
  // Steps 6 and 7 would be the first to fit (the captures cannot move before step 2): --warmup 8.
  EXPECT_NE(none.shortfall.find("raise --warmup by 3"), std::string::npos) << none.shortfall;
}

// ---- end to end, through the ddpx executable ----

// SGD with momentum unless `extra` chooses AdamW (whose runs may not name --momentum).
std::string train_args(const std::string& extra) {
  const bool adamw = extra.find("--optimizer adamw") != std::string::npos;
  return "train --device cpu --model vit_tiny_test --batch 4 --data learnable --workers 1 --steps 10 --warmup 5 "
         "--bucket-mb 0.02 --first-bucket-mb 0.02 --seed 3 --quiet " +
         std::string(adamw ? "" : "--lr 0.05 --momentum 0.9 ") + extra;
}

// The report's DDP cost, checked against the report's own records: measured and plain are the medians the
// guarantee names, and the parts add up to their difference.
void expect_cost_adds_up(const RunReport& report, int64_t calibration_steps, int64_t warmup = 5) {
  ASSERT_TRUE(report.ddp_cost.has_value());
  const DdpCost& cost = *report.ddp_cost;
  EXPECT_EQ(cost.calibration_steps, calibration_steps);
  std::vector<double> measured, plain;
  for (const RankRun& rank : report.ranks) {
    ASSERT_EQ(static_cast<int64_t>(rank.calibration.size()), calibration_steps);
    std::vector<double> totals, plains;
    for (const StepRecord& step : rank.steps) totals.push_back(step.phases.total_ms);
    for (const CalibrationRecord& record : rank.calibration) {
      plains.push_back(record.plain.total_ms);
      EXPECT_EQ(record.plain.exposed_comm_ms, 0.0);
      EXPECT_GE(record.reduce_ms, 0.0);
      EXPECT_LE(record.step, warmup);  // inside the warm-up
    }
    measured.push_back(median_of(totals));
    plain.push_back(median_of(plains));
  }
  EXPECT_DOUBLE_EQ(cost.measured_step_ms, median_of(measured));
  EXPECT_DOUBLE_EQ(cost.plain_step_ms, median_of(plain));
  EXPECT_DOUBLE_EQ(cost.cost_ms, cost.measured_step_ms - cost.plain_step_ms);
  EXPECT_NEAR(cost.exposed_comm_ms + cost.hook_work_ms + cost.other_ms, cost.cost_ms, 1e-9);
  EXPECT_GE(cost.hook_work_ms, 0.0);
  // The analysis of the saved report gives the same figures.
  EXPECT_EQ(summarize_steps(report).ddp_cost, report.ddp_cost);
}

struct OneRankCase {
  std::string name;
  std::string flags;
};

void PrintTo(const OneRankCase& c, std::ostream* out) { *out << c.name << " (" << c.flags << ")"; }

class CalibratedOneRank : public ::testing::TestWithParam<OneRankCase> {};

TEST_P(CalibratedOneRank, SameWeightsAndACostWhosePartsAddUp) {
  const fs::path dir = testing::fresh_dir("calibration_" + GetParam().name);
  const std::string flags = "--ddp --backend self " + GetParam().flags;
  const testing::CliResult calibrated = run_ddpx(train_args(flags + " --calibrate-steps 2 --report " +
                                                            (dir / "run.json").string() + " --save " +
                                                            (dir / "calibrated.safetensors").string()));
  ASSERT_EQ(calibrated.status, 0) << calibrated.output;
  const testing::CliResult plain =
      run_ddpx(train_args(flags + " --calibrate-steps 0 --save " + (dir / "uncalibrated.safetensors").string()));
  ASSERT_EQ(plain.status, 0) << plain.output;
  EXPECT_EQ(saved_weights(dir / "calibrated.safetensors"), saved_weights(dir / "uncalibrated.safetensors"));
  const RunReport report = load_run_report((dir / "run.json").string());
  expect_cost_adds_up(report, 2);
  EXPECT_EQ(report.ranks.front().calibration.front().step, 4);
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    Hooks, CalibratedOneRank,
    ::testing::Values(OneRankCase{"allreduce", ""}, OneRankCase{"bf16", "--comm-hook bf16"},
                      OneRankCase{"powersgd", "--comm-hook powersgd:2"},  // compressed from step 2, error feedback
                      OneRankCase{"no_overlap", "--no-overlap --optimizer-overlap off"},
                      OneRankCase{"adamw_accum", "--optimizer adamw --lr 0.001 --grad-accum 2"}),
    [](const ::testing::TestParamInfo<OneRankCase>& info) { return info.param.name; });

#ifdef DDPX_HAVE_MPI
// --nproc-per-node 2 on the CPU: ddpx re-runs itself under mpirun (the MPI backend).
TEST(CalibratedRun, TwoCpuRanksEndWithTheWeightsOfAnUncalibratedRun) {
  const fs::path dir = testing::fresh_dir("calibration_two_ranks");
  const testing::CliResult calibrated = run_ddpx(train_args(
      "--nproc-per-node 2 --calibrate-steps 3 --report " + (dir / "run.json").string() + " --save " +
      (dir / "calibrated.safetensors").string()));
  ASSERT_EQ(calibrated.status, 0) << calibrated.output;
  const testing::CliResult plain = run_ddpx(
      train_args("--nproc-per-node 2 --calibrate-steps 0 --save " + (dir / "uncalibrated.safetensors").string()));
  ASSERT_EQ(plain.status, 0) << plain.output;
  EXPECT_EQ(saved_weights(dir / "calibrated.safetensors"), saved_weights(dir / "uncalibrated.safetensors"));
  const RunReport report = load_run_report((dir / "run.json").string());
  ASSERT_EQ(report.ranks.size(), 2u);
  expect_cost_adds_up(report, 3);
  fs::remove_all(dir);
}
#endif

// The GPU path: calibration steps replayed from their own graphs (--cuda-graph on: captures at 2..5, calibration
// 6..8, step 9 ordinary, measured from 10) and eager (--cuda-graph off: calibration 6..8 as well, the CUDA engine's
// one-step lag keeping step 9 ordinary) leave the weights of an uncalibrated run, bit for bit (NCCL at one rank is
// exact; the bf16 hook's rounding is the same at any time).
TEST(CalibratedCudaRun, GraphAndEagerCalibrationKeepTheWeightsAndTheCostAddsUp) {
  DDPX_REQUIRE_GPU();
  for (const std::string graph : {"on", "off"})
    for (const std::string hook : {"allreduce", "bf16"}) {
      const fs::path dir = testing::fresh_dir("calibration_cuda_" + graph + "_" + hook);
      const std::string args =
          "train --device cuda --model vit_tiny_test --batch 8 --data learnable --workers 2 --steps 14 --warmup 9 "
          "--bucket-mb 0.02 --first-bucket-mb 0.02 --lr 0.05 --momentum 0.9 --seed 3 --quiet --ddp --cuda-graph " +
          graph + " --comm-hook " + hook;
      // Two processes agree bit for bit only if they multiply with the same cuBLASLt algorithms: the autotuner
      // times its candidates, so it may pick differently from run to run (a few ulps after 14 steps).
      const std::string same_algorithms = "DDPX_MATMUL_AUTOTUNE=0";
      const testing::CliResult calibrated = run_ddpx(args + " --calibrate-steps 3 --report " +
                                                         (dir / "run.json").string() + " --save " +
                                                         (dir / "calibrated.safetensors").string(),
                                                     same_algorithms);
      ASSERT_EQ(calibrated.status, 0) << calibrated.output;
      const testing::CliResult plain = run_ddpx(
          args + " --calibrate-steps 0 --save " + (dir / "uncalibrated.safetensors").string(), same_algorithms);
      ASSERT_EQ(plain.status, 0) << plain.output;
      EXPECT_EQ(saved_weights(dir / "calibrated.safetensors"), saved_weights(dir / "uncalibrated.safetensors"))
          << graph << " " << hook;
      const RunReport report = load_run_report((dir / "run.json").string());
      expect_cost_adds_up(report, 3, 9);
      EXPECT_EQ(report.ranks.front().calibration.front().step, 6) << graph << " " << hook;
      fs::remove_all(dir);
    }
}

TEST(CalibratedRun, WithoutDdpOrWithCalibrationOffTheReportHasNoCost) {
  const fs::path dir = testing::fresh_dir("calibration_off");
  for (const std::string flags : {"", "--ddp --backend self --calibrate-steps 0"}) {
    const testing::CliResult run = run_ddpx(train_args(flags + " --report " + (dir / "run.json").string()));
    ASSERT_EQ(run.status, 0) << run.output;
    const RunReport report = load_run_report((dir / "run.json").string());
    EXPECT_FALSE(report.ddp_cost.has_value()) << flags;
    EXPECT_TRUE(report.ranks.front().calibration.empty()) << flags;
  }
  const testing::CliResult bad = run_ddpx(train_args("--ddp --calibrate-steps -1"));
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.output.find("--calibrate-steps"), std::string::npos) << bad.output;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ddpx
