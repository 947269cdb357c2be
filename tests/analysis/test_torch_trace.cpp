// Tests of analysis/torch_trace: PyTorch profiler traces read as run reports. The fixtures
// (tests/fixtures/torch_profile, tools/record_torch_profile.py) are Debian's torch 1.13 DDP over Gloo, 2 ranks,
// legacy-profiler JSON, with injected delays: rank 1 sleeps 40 ms in its forward, every rank 15 ms in a range
// named Optimizer.step#Delay.step. The figures asserted are the fixture's own, worked out by hand from its events
// (cross-checked with the delays: no forward of rank 1 below 40 ms, no optimizer below 15 ms).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "error_expect.hpp"
#include "analysis/step_breakdown.hpp"
#include "analysis/torch_trace.hpp"

#define EXPECT_ERROR_CONTAINS(call, needle) ::ddpx::testing::expect_error([&] { (void)(call); }, {needle})

namespace ddpx {
namespace {

const std::string kFixtures = std::string(DDPX_SOURCE_DIR) + "/tests/fixtures/torch_profile/";

RunReport fixture_report() {
  return read_torch_profiles({kFixtures + "trace_rank0.json", kFixtures + "trace_rank1.json"}, {.batch = 32});
}

TEST(TorchTrace, ReadsBothRanksStepsAndPhases) {
  const RunReport report = fixture_report();
  ASSERT_EQ(report.ranks.size(), 2u);
  EXPECT_EQ(report.config.world, 2);
  EXPECT_EQ(report.config.batch, 32);
  for (const RankRun& run : report.ranks) {
    ASSERT_EQ(run.steps.size(), 2u);
    EXPECT_EQ(run.steps[0].step, 1);
    EXPECT_EQ(run.steps[1].step, 2);
    for (const StepRecord& s : run.steps) {
      const PhaseTimes& p = s.phases;
      EXPECT_GE(p.optimizer_ms, 15.0) << "the injected 15 ms optimizer delay";
      EXPECT_GT(p.backward_ms, 0.0);
      EXPECT_LE(p.serial_sum_ms(), p.total_ms + 1e-6) << "the serial parts fit in the step";
      ASSERT_FALSE(s.buckets.empty());
      EXPECT_EQ(s.buckets.back().collective, "all_reduce");
    }
  }
  for (const StepRecord& s : report.ranks[1].steps) EXPECT_GE(s.phases.forward_ms, 40.0) << "the 40 ms delay";
}

TEST(TorchTrace, RankZeroWaitsForTheDelayedRankInTheAllReduce) {
  const RunReport report = fixture_report();
  // Step 1: rank 0 finished its backward 36.8 ms into the step, and its all-reduce ran until rank 1 arrived.
  const StepRecord& step = report.ranks[0].steps[0];
  EXPECT_GE(step.phases.exposed_comm_ms, 40.0);
  EXPECT_NEAR(step.phases.exposed_comm_ms, step.phases.comm_ms, 1.0) << "nothing computes while it waits";
  // Rank 1, the late one, finds rank 0 waiting: its communication is short and barely exposed.
  EXPECT_LT(report.ranks[1].steps[0].phases.exposed_comm_ms, step.phases.exposed_comm_ms / 4);
  EXPECT_EQ(waited_for_rank(report), 1) << "the delayed rank";
  EXPECT_EQ(fastest_rank(report), 0);
}

TEST(TorchTrace, OneRankReportDropsTheCommunication) {
  const RunReport report = fixture_report();
  const int rank = fastest_rank(report);
  const RunReport one = one_rank_report(report, rank, 18954);
  ASSERT_EQ(one.ranks.size(), 1u);
  EXPECT_EQ(one.config.world, 1);
  ASSERT_EQ(one.config.gradient_tensors.size(), 1u);
  EXPECT_EQ(one.config.gradient_tensors[0].numel, 18954);
  for (size_t i = 0; i < one.ranks[0].steps.size(); ++i) {
    const StepRecord& s = one.ranks[0].steps[i];
    const StepRecord& original = report.ranks[static_cast<size_t>(rank)].steps[i];
    EXPECT_TRUE(s.buckets.empty());
    EXPECT_EQ(s.phases.exposed_comm_ms, 0.0);
    EXPECT_DOUBLE_EQ(s.phases.total_ms, original.phases.total_ms - original.phases.exposed_comm_ms);
  }
  EXPECT_ERROR_CONTAINS(one_rank_report(report, rank, 0), "--torch-gradients");
}

TEST(TorchTrace, KinetoObjectFormWithRankAndMessageSizes) {
  const nlohmann::json trace = nlohmann::json::parse(R"({
    "distributedInfo": {"rank": 1, "world_size": 2, "backend": "nccl"},
    "traceEvents": [
      {"ph": "X", "name": "ProfilerStep#7", "ts": 1000, "dur": 10000, "tid": 1, "cat": "user_annotation"},
      {"ph": "X", "name": "DistributedDataParallel.forward", "ts": 1100, "dur": 2000, "tid": 1},
      {"ph": "X", "name": "autograd::engine::evaluate_function: AddmmBackward0", "ts": 3500, "dur": 3000, "tid": 2},
      {"ph": "X", "name": "nccl:all_reduce", "ts": 5000, "dur": 3000, "tid": 1, "cat": "user_annotation",
       "args": {"In msg nelems": 1000, "dtype": "Float"}},
      {"ph": "X", "name": "Optimizer.step#SGD.step", "ts": 9000, "dur": 500, "tid": 1},
      {"ph": "i", "name": "marker", "ts": 1200}
    ]})");
  const RankRun run = rank_run_from_torch_trace(trace, "t.json", 0);
  EXPECT_EQ(run.info.rank, 1);
  EXPECT_EQ(run.info.world_size, 2);
  ASSERT_EQ(run.steps.size(), 1u);
  const StepRecord& s = run.steps[0];
  EXPECT_EQ(s.step, 7);
  EXPECT_DOUBLE_EQ(s.phases.total_ms, 10.0);
  EXPECT_DOUBLE_EQ(s.phases.forward_ms, 2.4);   // 1.1 .. 3.5 ms: forward and loss
  EXPECT_DOUBLE_EQ(s.phases.backward_ms, 3.0);
  EXPECT_DOUBLE_EQ(s.phases.optimizer_ms, 0.5);
  EXPECT_DOUBLE_EQ(s.phases.comm_ms, 3.0);
  EXPECT_NEAR(s.phases.exposed_comm_ms, 1.5, 1e-9);  // 6.5 .. 8.0 ms: after the backward, before the optimizer
  ASSERT_EQ(s.buckets.size(), 1u);
  EXPECT_EQ(s.buckets[0].bytes, 4000);
  EXPECT_DOUBLE_EQ(s.buckets[0].start_ms, 4.0);
}

TEST(TorchTrace, RefusesWhatIsNotATorchTraceNamingWhatIsMissing) {
  EXPECT_ERROR_CONTAINS(rank_run_from_torch_trace(nlohmann::json::parse(R"({"config": {}})"), "r.json", 0),
                        "r.json is not a PyTorch profiler trace");
  EXPECT_ERROR_CONTAINS(rank_run_from_torch_trace(nlohmann::json::parse("42"), "n.json", 0), "not a PyTorch");
  EXPECT_ERROR_CONTAINS(
      rank_run_from_torch_trace(nlohmann::json::parse(R"([{"ph": "X", "name": "aten::mm", "ts": 1, "dur": 2}])"),
                                "s.json", 0),
      "s.json: no ProfilerStep#N ranges");
  EXPECT_ERROR_CONTAINS(
      rank_run_from_torch_trace(
          nlohmann::json::parse(R"([{"ph": "X", "name": "ProfilerStep#3", "ts": 0, "dur": 9},
                                    {"ph": "X", "name": "aten::mm", "ts": 1, "dur": 2}])"), "f.json", 0),
      "f.json: step 3 holds no DistributedDataParallel.forward range");
}

TEST(TorchTrace, RefusesRanksWithDifferentSteps) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "ddpx_torch_trace_test";
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, int first_step) {
    std::ofstream out(dir / name);
    out << "[";
    for (int k = 0; k < 2; ++k) {
      const int step = first_step + k, t = 10000 * k;
      out << (k ? "," : "") << R"({"ph": "X", "name": "ProfilerStep#)" << step << R"(", "ts": )" << t
          << R"(, "dur": 9000}, {"ph": "X", "name": "DistributedDataParallel.forward", "ts": )" << t + 100
          << R"(, "dur": 1000}, {"ph": "X", "name": "autograd::engine::evaluate_function: X", "ts": )" << t + 2000
          << R"(, "dur": 1000})";
    }
    out << "]";
  };
  write("a.json", 2);
  write("b.json", 3);
  EXPECT_ERROR_CONTAINS(read_torch_profiles({(dir / "a.json").string(), (dir / "b.json").string()}),
                        "the ranks' traces hold different steps: rank 0 has ProfilerStep#2..3 (2 steps), rank 1 has "
                        "#3..4");
  EXPECT_ERROR_CONTAINS(read_torch_profiles({(dir / "missing.json").string()}), "missing.json");
  // One trace twice (a symlink counts) is not two ranks (issue 48).
  std::filesystem::create_symlink(dir / "a.json", dir / "link.json");
  EXPECT_ERROR_CONTAINS(read_torch_profiles({(dir / "a.json").string(), (dir / "link.json").string()}),
                        "are the same file: one trace would be read as two ranks");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ddpx
