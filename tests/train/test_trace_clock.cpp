// Traces that load and line up (Note [One clock for all ranks], docs/design.md), end to end through `ddpx train
// --trace`: two CPU ranks (over MPI, then Gloo) write one trace that the project's checker accepts, whose step k
// overlaps in time across the ranks (they all-reduce every step, so on one clock step k must overlap), with each
// rank's clock offset kept in the report, and the report naming the backend each run really used (gloo, mpi);
// `ddpx report --check-trace` says so, and refuses a bad trace with exit
// status 1. On a GPU (skipped without one) a real CUDA trace, laid out from the GPU's event times, passes the
// same checker.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "cli_runner.hpp"
#include "gpu_guard.hpp"
#include "report/step_record.hpp"
#include "analysis/trace_check.hpp"
#include "train/run_modes.hpp"
#include "train/trainer.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::CliResult;

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("ddpx_test_trace_clock_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

json read_json(const fs::path& path) {
  std::ifstream in(path);
  return json::parse(in);
}

struct Interval {
  double start_us = 0, end_us = 0;
};

// "Batch k" slices of one process: step -> [ts, ts + dur] in microseconds.
std::map<int64_t, Interval> steps_of(const json& trace, int pid) {
  std::map<int64_t, Interval> steps;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || e["pid"] != pid) continue;
    const std::string name = e["name"].get<std::string>();
    if (name.rfind("Batch ", 0) != 0) continue;
    const double ts = e["ts"].get<double>();
    steps[e["args"]["step"].get<int64_t>()] = Interval{ts, ts + e["dur"].get<double>()};
  }
  return steps;
}

#if defined(DDPX_HAVE_MPI) || defined(DDPX_HAVE_GLOO)
void expect_two_rank_trace_lines_up(const std::string& backend_flags, const std::string& tag) {
  const fs::path trace_path = scratch(tag + ".trace.json");
  const fs::path report_path = scratch(tag + ".report.json");
  const CliResult run = testing::run_ddpx(fmt::format(
      "train --device cpu --model vit_tiny_test --nproc-per-node 2 --batch 2 --steps 10 --warmup 2 --workers 1 "
      "--log-every 1 --comm-timeout 60 --trace {} --report {}{}",
      trace_path.string(), report_path.string(), backend_flags));
  ASSERT_EQ(run.status, 0) << run.output;

  // The checker accepts the real trace, through the library and through the CLI.
  const TraceCheck check = check_trace_file(trace_path.string());
  EXPECT_TRUE(check.ok()) << check.problems.front();
  EXPECT_EQ(check.processes, 2u);
  const CliResult checked = testing::run_ddpx("report --check-trace " + trace_path.string());
  EXPECT_EQ(checked.status, 0) << checked.output;
  EXPECT_NE(checked.output.find("every track well nested, in time order"), std::string::npos) << checked.output;

  // Each rank's offset to rank 0 is in the report. One host: one steady clock, so the true offset is 0 and the
  // measured bound (causal, not statistical) holds it.
  const RunReport report = load_run_report(report_path.string());
  ASSERT_EQ(report.ranks.size(), 2u);
  // The backend the communicator really used (issue 36 move 4: a Gloo run is not reported as MPI).
  EXPECT_EQ(report.config.backend, tag);
  EXPECT_EQ(report.ranks[1].info.transport, tag == "gloo" ? "Gloo (TCP, host memory)" : "MPI (host memory)");
  ASSERT_TRUE(report.ranks[0].info.clock.has_value());
  ASSERT_TRUE(report.ranks[1].info.clock.has_value());
  EXPECT_EQ(report.ranks[0].info.clock->offset_ms, 0.0);
  EXPECT_EQ(report.ranks[0].info.clock->uncertainty_ms, 0.0);
  const ClockAlignment rank1 = *report.ranks[1].info.clock;
  EXPECT_LE(std::abs(rank1.offset_ms), rank1.uncertainty_ms + 1e-9);
  const CliResult shown = testing::run_ddpx("report " + report_path.string());
  EXPECT_EQ(shown.status, 0) << shown.output;
  EXPECT_NE(shown.output.find("clock: every rank on rank 0's clock; offsets to it: rank 1 "), std::string::npos)
      << shown.output;

  // Step k of rank 0 and of rank 1 overlap on the common clock: neither rank's all-reduce of step k can end
  // before the other's began. Slack: rank 1's clock uncertainty, plus 1 ns of printing.
  const json trace = read_json(trace_path);
  const std::map<int64_t, Interval> steps0 = steps_of(trace, 0), steps1 = steps_of(trace, 1);
  ASSERT_EQ(steps0.size(), 8u);  // 10 steps, 2 of warm-up
  ASSERT_EQ(steps1.size(), 8u);
  const double slack_us = rank1.uncertainty_ms * 1e3 + 1e-3;
  for (const auto& [step, a] : steps0) {
    ASSERT_EQ(steps1.count(step), 1u) << "step " << step;
    const Interval& b = steps1.at(step);
    EXPECT_LT(a.start_us, b.end_us + slack_us) << "step " << step << ": rank 0 starts after rank 1 ends";
    EXPECT_LT(b.start_us, a.end_us + slack_us) << "step " << step << ": rank 1 starts after rank 0 ends";
  }
  fs::remove(trace_path);
  fs::remove(report_path);
}
#endif

#ifdef DDPX_HAVE_MPI
TEST(TraceClock, TwoMpiRanksTracesPassTheCheckerAndTheirStepsOverlap) {
  expect_two_rank_trace_lines_up("", "mpi");
}
#endif

#ifdef DDPX_HAVE_GLOO
TEST(TraceClock, TwoGlooRanksTracesPassTheCheckerAndTheirStepsOverlap) {
  expect_two_rank_trace_lines_up(" --backend gloo", "gloo");
}
#endif

TEST(TraceClock, ReportCheckTraceRefusesABadTraceWithExitStatusOne) {
  const fs::path bad = scratch("overlapping.trace.json");
  std::ofstream(bad) << R"({"traceEvents": [
    {"ph": "M", "name": "thread_name", "pid": 0, "tid": 3, "args": {"name": "comm"}},
    {"ph": "X", "name": "bucket 0", "pid": 0, "tid": 3, "ts": 10, "dur": 5},
    {"ph": "X", "name": "bucket 1", "pid": 0, "tid": 3, "ts": 12, "dur": 5}]})";
  const CliResult r = testing::run_ddpx("report --check-trace " + bad.string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("1 problem"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"bucket 1\" (12.000-17.000 us) overlaps \"bucket 0\""), std::string::npos) << r.output;
  const CliResult missing = testing::run_ddpx("report --check-trace " + scratch("absent.json").string());
  EXPECT_EQ(missing.status, 2) << missing.output;
  EXPECT_NE(missing.output.find("cannot read trace"), std::string::npos) << missing.output;
  const CliResult nothing = testing::run_ddpx("report");
  EXPECT_EQ(nothing.status, 2) << nothing.output;
  EXPECT_NE(nothing.output.find("give a run report"), std::string::npos) << nothing.output;
  fs::remove(bad);
}

// GPU: a few DDP steps on CUDA (world 1, so every bucket is timed at the progress lines) write a real trace; the
// checker accepts it, and its steps are laid out from the GPU's event times, one after the other.
TEST(TraceClock, ACudaTrainingTracePassesTheChecker) {
  DDPX_REQUIRE_GPU();
  for (const char* graphs : {"off", "on"}) {
    SCOPED_TRACE(graphs);
    TrainOptions o;
    o.device = Device::cuda;
    o.model = "vit_tiny_test";
    o.batch = 8;
    o.steps = 12;
    o.warmup_steps = 2;
    o.log_every = 2;
    o.data = DataSource::learnable;
    o.workers = 2;
    o.quiet = true;
    o.ddp = true;
    o.cuda_graph = parse_graph_policy(graphs);
    o.trace = scratch(std::string("cuda_") + graphs + ".trace.json").string();
    run_training(o);
    const TraceCheck check = check_trace_file(o.trace);
    EXPECT_TRUE(check.ok()) << check.problems.front();
    const json trace = read_json(o.trace);
    size_t device_steps = 0, buckets = 0;
    for (const json& e : trace["traceEvents"]) {
      if (e["ph"] != "X") continue;
      const std::string name = e["name"].get<std::string>();
      if (name.rfind("Batch ", 0) == 0 && e["args"].value("timeline", "") == "device") ++device_steps;
      if (name.rfind("bucket ", 0) == 0) {
        ++buckets;
        EXPECT_GT(e["args"]["bytes"].get<int64_t>(), 0);
        EXPECT_TRUE(e["args"].contains("busbw_GBps"));
      }
    }
    // Every measured step whose events were read has a device start (the two newest may not have been read).
    EXPECT_GE(device_steps, 6u);
    EXPECT_GT(buckets, 0u);
    fs::remove(o.trace);
  }
}

}  // namespace
}  // namespace ddpx
