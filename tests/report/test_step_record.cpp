// Step records: comm-phase arithmetic and JSON round trips with field-naming errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "core/error.hpp"
#include "error_expect.hpp"
#include "report/step_record.hpp"
#include "recorded_data.hpp"

namespace ddpx {
namespace {

BucketRecord bucket(int index, double launch, double start, double end) {
  BucketRecord b;
  b.index = index;
  b.bytes = 100 << 20;
  b.elements = 25 << 20;
  b.launch_ms = launch;
  b.start_ms = start;
  b.end_ms = end;
  return b;
}

TEST(StepRecord, CommWindowRunsFromFirstLaunchToLastEnd) {
  std::vector<BucketRecord> buckets = {bucket(0, 10, 11, 14), bucket(1, 20, 20, 26), bucket(2, 30, 31, 38)};
  EXPECT_DOUBLE_EQ(comm_window_ms(buckets), 28.0);
  EXPECT_DOUBLE_EQ(comm_window_ms({}), 0.0);
}

TEST(StepRecord, ExposedCommIsWhatRunsPastBackwardPlusSerialComm) {
  std::vector<BucketRecord> buckets = {bucket(0, 10, 11, 14), bucket(1, 30, 31, 38)};
  EXPECT_DOUBLE_EQ(exposed_comm_ms(buckets, 35.0), 3.0);       // 38 - 35
  EXPECT_DOUBLE_EQ(exposed_comm_ms(buckets, 40.0), 0.0);       // fully hidden: clipped at 0
  EXPECT_DOUBLE_EQ(exposed_comm_ms(buckets, 40.0, 2.5), 2.5);  // plus serial comm
  StepRecord step;
  step.buckets = buckets;
  fill_comm_phases(step, 35.0, 1.0);
  EXPECT_DOUBLE_EQ(step.phases.comm_ms, 29.0);  // 38 - 10 + 1
  EXPECT_DOUBLE_EQ(step.phases.exposed_comm_ms, 4.0);
  EXPECT_THROW(exposed_comm_ms(buckets, 35.0, -1.0), Error);
}

TEST(StepRecord, ReportRoundTripsThroughJson) {
  RunReport report;
  report.config.world = 2;
  report.config.hook = "bf16";
  report.config.overlap = false;
  for (int r = 0; r < 2; ++r) {
    RankRun run;
    run.info = RankInfo{r, "NVIDIA H200", "bf16", 2, "P2P/CUMEM/read"};
    StepRecord step;
    step.step = 10 + r;
    step.start_ms = 123.5;
    step.phases = PhaseTimes{0.1, 0.2, 10, 20, 8, 3, 1.5, 34.8};
    step.buckets = {bucket(0, 1, 2, 3), bucket(1, 4, 5, 6)};
    step.buckets[1].hook = "bf16";
    if (r == 1) step.gpu_busy_ms = 30.25;
    run.steps.push_back(step);
    report.ranks.push_back(run);
  }
  const nlohmann::json j = report;
  EXPECT_EQ(j["ranks"][0]["steps"][0]["gpu_busy_ms"], nullptr);
  EXPECT_EQ(j.get<RunReport>(), report);
}

TEST(StepRecord, MissingOrMistypedFieldsAreNamed) {
  nlohmann::json phases = {{"forward_ms", 1.0}, {"backward_ms", 1.0}, {"total_ms", 2.0}};
  EXPECT_EQ(phases.get<PhaseTimes>().data_wait_ms, 0.0);  // optional phases default to 0
  nlohmann::json missing = {{"forward_ms", 1.0}, {"backward_ms", 1.0}};
  try {
    missing.get<PhaseTimes>();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'total_ms'"), std::string::npos) << e.what();
  }
  nlohmann::json mistyped = {{"forward_ms", "fast"}, {"backward_ms", 1.0}, {"total_ms", 2.0}};
  try {
    mistyped.get<PhaseTimes>();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'forward_ms'"), std::string::npos) << e.what();
  }
  nlohmann::json bad_order = nlohmann::json(bucket(3, 5, 4, 6));
  EXPECT_THROW(bad_order.get<BucketRecord>(), Error);  // start before launch

  // Impossible values are refused instead of turning into "-4939%" or a negative bandwidth.
  nlohmann::json negative = {{"forward_ms", -100.0}, {"backward_ms", 1.0}, {"total_ms", 2.0}};
  testing::expect_error([&] { negative.get<PhaseTimes>(); }, {"'forward_ms'", "-100"});
  nlohmann::json no_bytes = nlohmann::json(bucket(3, 4, 5, 6));
  no_bytes["bytes"] = -81024;
  testing::expect_error([&] { no_bytes.get<BucketRecord>(); }, {"'bytes'", "-81024"});
  // Counts must be whole numbers that fit (nlohmann would read 4.7 as 4 and wrap 2^40 into an int).
  RunConfig config;
  nlohmann::json fractional = config;
  fractional["batch"] = 4.7;
  testing::expect_error([&] { fractional.get<RunConfig>(); }, {"'batch'", "whole number", "4.7"});
  nlohmann::json huge = config;
  huge["world"] = int64_t{1} << 40;
  testing::expect_error([&] { huge.get<RunConfig>(); }, {"'world'", "whole number"});
}

// Found with tests/fuzz/fuzz_run_report: a report with a time of 1e300 ms was accepted, and `ddpx report --trace`
// then wrote events at ts -9.2e15 us (the nanoseconds did not fit an int64).
TEST(StepRecord, TimesBeyondAnyRunAreRefused) {
  StepRecord step;
  step.phases = PhaseTimes{0.1, 0.2, 10, 20, 8, 3, 1.5, 34.8};
  step.buckets = {bucket(0, 1, 2, 3)};
  const nlohmann::json good = step;
  EXPECT_NO_THROW(good.get<StepRecord>());
  nlohmann::json start = good;
  start["start_ms"] = 1e300;
  testing::expect_error([&] { start.get<StepRecord>(); }, {"'start_ms'", "1e+300"});
  nlohmann::json total = good;
  total["phases"]["total_ms"] = 1e300;
  testing::expect_error([&] { total.get<StepRecord>(); }, {"'total_ms'"});
  nlohmann::json bucket_end = good;
  bucket_end["buckets"][0]["end_ms"] = 1e300;
  testing::expect_error([&] { bucket_end.get<StepRecord>(); }, {"'end_ms'"});
  nlohmann::json bucket_launch = good;
  bucket_launch["buckets"][0]["launch_ms"] = -1e300;
  testing::expect_error([&] { bucket_launch.get<StepRecord>(); }, {"'launch_ms'"});
}

// What made the run: version, commit, start, host, command line, optimizer, losses and throughput.
RunReport report_with_provenance() {
  RunReport report;
  report.config.world = 1;
  report.config.ddpx_version = "0.1";
  report.config.ddpx_commit = "e933e79-dirty";
  report.config.weight_grads = "bf16";
  report.config.started_utc = "2026-12-01T09:37:00Z";
  report.config.command_line = {"ddpx", "train", "--optimizer", "adamw", "--lr", "0.001"};
  report.config.optimizer = OptimizerInfo{"adamw", 1e-3, 0, 0.05, 0.9, 0.999, 1e-8, false};
  RankRun run;
  run.info = RankInfo{0, "cpu", "fp32", 1, "", "node-a"};
  StepRecord step;
  step.step = 6;
  step.phases = PhaseTimes{0, 0, 10, 20, 0, 0, 1, 31};
  run.steps.push_back(step);
  run.losses = {{1, 2.5}, {5, 2.25}, {10, 1.75}};
  report.ranks.push_back(run);
  report.throughput = RunThroughput{12.5, 50};
  return report;
}

TEST(StepRecord, WhatMadeTheRunRoundTripsThroughJson) {
  const RunReport report = report_with_provenance();
  const nlohmann::json j = report;
  EXPECT_EQ(j.get<RunReport>(), report);
  // Only the hyperparameters of the optimizer used are written.
  EXPECT_TRUE(j["config"]["optimizer"].contains("beta2"));
  EXPECT_FALSE(j["config"]["optimizer"].contains("momentum"));
  EXPECT_EQ(report.config.optimizer.text(), "adamw lr 0.001 betas 0.9,0.999 eps 1e-08 weight_decay 0.05");
  RunReport sgd = report;
  sgd.config.optimizer = OptimizerInfo{"sgd", 0.01, 0.9, 0, 0, 0, 0, true};
  const nlohmann::json sgd_json = sgd;
  EXPECT_FALSE(sgd_json["config"]["optimizer"].contains("beta1"));
  EXPECT_EQ(sgd_json.get<RunReport>(), sgd);
  EXPECT_EQ(sgd.config.optimizer.text(), "sgd lr 0.01 momentum 0.9 nesterov weight_decay 0");
  // Throughput: the recorded figure, not the one computed from the steps (31 ms: 32.26 steps/s).
  EXPECT_DOUBLE_EQ(report_steps_per_s(report), 12.5);
  RunReport without = report;
  without.throughput.reset();
  EXPECT_NEAR(report_steps_per_s(without), 1000.0 / 31, 1e-9);
}

TEST(StepRecord, BadProvenanceFieldsAreNamed) {
  const nlohmann::json good = report_with_provenance();
  auto with = [&](const char* pointer, nlohmann::json value) {
    nlohmann::json j = good;
    j[nlohmann::json::json_pointer(pointer)] = std::move(value);
    return j;
  };
  testing::expect_error([&] { (void)with("/config/started_utc", "yesterday").get<RunReport>(); },
                        {"started_utc", "ISO 8601", "yesterday"});
  testing::expect_error([&] { (void)with("/config/optimizer/name", "lamb").get<RunReport>(); },
                        {"optimizer", "lamb"});
  testing::expect_error([&] { (void)with("/config/optimizer/lr", -1.0).get<RunReport>(); }, {"'lr'", "-1"});
  testing::expect_error([&] { (void)with("/config/command_line", "ddpx train").get<RunReport>(); },
                        {"command_line"});
  testing::expect_error([&] { (void)with("/ranks/0/losses/1/loss", "nan").get<RunReport>(); }, {"loss"});
  testing::expect_error(
      [&] { (void)with("/ranks/0/losses/1/loss", std::numeric_limits<double>::infinity()).get<RunReport>(); },
      {"step 5", "'loss' must be finite"});
  testing::expect_error([&] { (void)with("/ranks/0/losses/1/step", 20).get<RunReport>(); },
                        {"increasing step order", "20"});
  testing::expect_error([&] { (void)with("/throughput/steps_per_s", 0.0).get<RunReport>(); },
                        {"throughput", "steps_per_s"});
  testing::expect_error([&] { (void)with("/ranks/0/info/host", 7).get<RunReport>(); }, {"host"});
}

TEST(StepRecord, GradientTensorsRoundTripAndBadOnesAreNamed) {
  RunReport report = report_with_provenance();
  report.config.gradient_tensors = {{"heads.head.weight", {10, 64}, 0, 640}, {"heads.head.bias", {10}, 640, 10},
                                    {"encoder.ln.weight", {64}, 704, 64}};
  const nlohmann::json good = report;
  EXPECT_EQ(good.get<RunReport>(), report);
  EXPECT_EQ(good["config"]["gradient_tensors"][1]["offset"], 640);
  auto with = [&](const char* pointer, nlohmann::json value) {
    nlohmann::json j = good;
    j[nlohmann::json::json_pointer(pointer)] = std::move(value);
    return j;
  };
  testing::expect_error([&] { (void)with("/config/gradient_tensors/0/numel", 641).get<RunReport>(); },
                        {"heads.head.weight", "numel 641", "product of its shape"});
  testing::expect_error([&] { (void)with("/config/gradient_tensors/1/offset", 600).get<RunReport>(); },
                        {"buffer order", "heads.head.bias", "600"});
  testing::expect_error([&] { (void)with("/config/gradient_tensors/2/shape", "64").get<RunReport>(); },
                        {"shape"});
}

TEST(StepRecord, ReportsWithoutTheProvenanceFieldsStillLoad) {
  std::vector<std::string> paths;
  for (const char* name : {"comm_bound_nvlink.json", "comm_bound_shm.json", "compute_bound.json", "ddp_one_gpu.json",
                           "input_bound.json", "launch_bound.json", "no_overlap.json"})
    paths.push_back(testing::recorded_data(name));
  for (const char* name : {"2026-11-29-h200-bf16-report.json", "2026-12-01-h200-bf16-ddp1-report.json"})
    paths.push_back(std::string(DDPX_SOURCE_DIR) + "/docs/results/" + name);
  for (const std::string& path : paths) {
    SCOPED_TRACE(path);
    const RunReport report = load_run_report(path);
    EXPECT_TRUE(report.config.ddpx_commit.empty());
    EXPECT_TRUE(report.config.weight_grads.empty());
    EXPECT_TRUE(report.config.command_line.empty());
    EXPECT_TRUE(report.config.optimizer.name.empty());
    EXPECT_TRUE(report.ranks.front().losses.empty());
    EXPECT_FALSE(report.throughput.has_value());
    EXPECT_GT(report_steps_per_s(report), 0);
    // Written again, it stays without them (no empty fields appear).
    const nlohmann::json j = report;
    EXPECT_FALSE(j["config"].contains("optimizer"));
    EXPECT_FALSE(j.contains("throughput"));
    EXPECT_EQ(j.get<RunReport>(), report);
  }
}

// Note [One clock for all ranks]: each rank's clock offset to rank 0 and a CUDA step's device start are kept;
// reports written before them load without them, and bad values are named.
TEST(StepRecord, ClockOffsetAndDeviceStartRoundTripThroughJson) {
  RunReport report = report_with_provenance();
  report.ranks[0].info.clock = ClockAlignment{-12.25, 0.0625};
  report.ranks[0].steps[0].device_start_ms = 1234.5;
  const nlohmann::json j = report;
  EXPECT_EQ(j["ranks"][0]["info"]["clock"]["offset_ms"], -12.25);
  EXPECT_EQ(j["ranks"][0]["info"]["clock"]["uncertainty_ms"], 0.0625);
  EXPECT_EQ(j["ranks"][0]["info"]["clock"]["reference"], "rank 0");
  EXPECT_EQ(j["ranks"][0]["steps"][0]["device_start_ms"], 1234.5);
  EXPECT_EQ(j.get<RunReport>(), report);
  auto with = [&](const char* pointer, nlohmann::json value) {
    nlohmann::json bad = j;
    bad[nlohmann::json::json_pointer(pointer)] = std::move(value);
    return bad;
  };
  testing::expect_error([&] { (void)with("/ranks/0/info/clock/uncertainty_ms", -1.0).get<RunReport>(); },
                        {"rank info clock", "uncertainty_ms", "-1"});
  testing::expect_error([&] { (void)with("/ranks/0/info/clock", nlohmann::json::object()).get<RunReport>(); },
                        {"rank info clock", "missing field 'offset_ms'"});
  testing::expect_error([&] { (void)with("/ranks/0/steps/0/device_start_ms", "soon").get<RunReport>(); },
                        {"device_start_ms"});
  // Steps out of order (found by fuzz_run_report: its trace would draw step 12 after step 22).
  nlohmann::json reordered = j;
  reordered["ranks"][0]["steps"].push_back(reordered["ranks"][0]["steps"][0]);
  reordered["ranks"][0]["steps"][1]["step"] = 2;
  testing::expect_error([&] { (void)reordered.get<RunReport>(); },
                        {"rank run 0", "increasing step order", "step 2 follows step 6"});
  const RunReport older = load_run_report(testing::recorded_data("comm_bound_nvlink.json"));
  for (const RankRun& rank : older.ranks) {
    EXPECT_FALSE(rank.info.clock.has_value());
    for (const StepRecord& step : rank.steps) EXPECT_FALSE(step.device_start_ms.has_value());
  }
  const nlohmann::json rewritten = older;
  EXPECT_FALSE(rewritten["ranks"][0]["info"].contains("clock"));
  EXPECT_FALSE(rewritten["ranks"][0]["steps"][0].contains("device_start_ms"));
}

TEST(StepRecord, LoadNamesTheFile) {
  try {
    load_run_report("/nonexistent/report.json");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/report.json"), std::string::npos);
  }
}

// 200,000 nested brackets: refused by depth, not a stack overflow in the reader or in the error message.
TEST(StepRecord, DeeplyNestedJsonIsRefusedNotACrash) {
  const std::string path = ::testing::TempDir() + "ddpx_deep_report_" + std::to_string(::getpid()) + ".json";
  std::ofstream(path) << "{\"config\": " << std::string(200000, '[') << std::string(200000, ']') << "}";
  testing::expect_error([&] { load_run_report(path); }, {path, "nests JSON deeper than 64 levels"});
  std::remove(path.c_str());
}

}  // namespace
}  // namespace ddpx
