// Verdict rules on recorded reports (tests/fixtures/recorded, see README.md there). The numbers in the expected
// sentences are the across-rank medians of those files, rounded as the verdict prints them.
#include <gtest/gtest.h>

#include "analysis/verdict.hpp"
#include "recorded_data.hpp"

namespace ddpx {
namespace {

Verdict diagnose_file(const std::string& name, const PeakTable* peak = nullptr) {
  return diagnose(load_run_report(testing::recorded_data(name)), peak);
}

// A hand-made report: one rank on `device` whose five steps all look like `step` (numbered 0..4).
RunReport one_rank_report(const std::string& device, StepRecord step) {
  RunReport report;
  RankRun rank;
  rank.info.device_name = device;
  for (int i = 0; i < 5; ++i) {
    step.step = i;
    rank.steps.push_back(step);
  }
  report.ranks.push_back(rank);
  return report;
}

TEST(Verdict, CommunicationBoundOverSharedMemoryAdvisesCompression) {
  const Verdict v = diagnose_file("comm_bound_shm.json");
  EXPECT_EQ(v.bound, Bound::communication);
  EXPECT_NEAR(v.fraction, 34.031 / 50.9275, 0.001);
  EXPECT_EQ(v.text(),
            "Exposed communication is 67% of the step (34.0 of 50.9 ms) and the link is host shared memory (SHM): "
            "try --comm-hook powersgd:4, or --comm-hook bf16 --bucket-mb 25.");
}

TEST(Verdict, CommunicationBoundOverNvlinkWithOneBucketAdvisesSmallerBuckets) {
  const Verdict v = diagnose_file("comm_bound_nvlink.json");
  EXPECT_EQ(v.bound, Bound::communication);
  EXPECT_EQ(v.finding,
            "Exposed communication is 29% of the step (3.7 of 12.9 ms) and the link is GPU peer-to-peer "
            "(P2P/CUMEM/read)");
  EXPECT_EQ(v.advice,
            "all gradients travel in one bucket after the backward pass: try --bucket-mb 25 so communication "
            "overlaps it");
  EXPECT_TRUE(v.notes.empty());
}

TEST(Verdict, OneBucketOfASmallModelIsSplitBelowItsSize) {
  // A model whose gradients (here 4 MB) fit in one bucket at any usual cap: the advice splits them in four.
  StepRecord step;
  step.phases.forward_ms = 2;
  step.phases.backward_ms = 4;
  step.phases.comm_ms = 4;
  step.phases.exposed_comm_ms = 4;
  step.phases.total_ms = 10;
  BucketRecord bucket;
  bucket.elements = 1 << 20;
  bucket.bytes = 4 << 20;
  bucket.start_ms = 6;
  bucket.end_ms = 10;
  step.buckets.push_back(bucket);
  RunReport report = one_rank_report("NVIDIA H200", step);
  report.ranks.front().info.transport = "P2P/CUMEM/read";
  report.config.world = 2;
  report.config.ddp = true;
  report.config.bucket_mb = 25;
  const Verdict v = diagnose(report);
  EXPECT_EQ(v.bound, Bound::communication);
  EXPECT_EQ(v.advice, "all gradients travel in one bucket after the backward pass: try --bucket-mb 1 so "
                      "communication overlaps it");
}

TEST(Verdict, NoOverlapIsNamedFirst) {
  const Verdict v = diagnose_file("no_overlap.json");
  EXPECT_EQ(v.bound, Bound::communication);
  EXPECT_EQ(v.text(),
            "--no-overlap is set and communication is 32% of the step (4.2 of 13.3 ms): drop it, so buckets overlap "
            "the backward pass.");
}

TEST(Verdict, InputBoundAdvisesMoreWorkers) {
  const Verdict v = diagnose_file("input_bound.json");
  EXPECT_EQ(v.bound, Bound::input);
  EXPECT_EQ(v.text(),
            "Waiting for input is 26% of the step (21.5 of 82.8 ms: 21.1 data wait, 0.40 copy): raise --workers "
            "(now 2).");
}

TEST(Verdict, ComputeBoundNamesTheStraggler) {
  const Verdict v = diagnose_file("compute_bound.json");
  EXPECT_EQ(v.bound, Bound::compute);
  EXPECT_EQ(v.advice, "communication and input are hidden; only faster kernels or a larger --batch raise throughput");
  EXPECT_NE(v.finding.find("Compute bounds the step: forward, backward and optimizer are 99% of it"),
            std::string::npos)
      << v.finding;
  ASSERT_EQ(v.notes.size(), 1u);
  // Rank 2's median total 67.48 ms over the median rank's (61.95 + 62.09) / 2 = 62.02 ms: 8.8% slower.
  EXPECT_EQ(v.notes[0],
            "rank 2 (NVIDIA H200) is 8.8% slower than the median rank (67.5 vs 62.0 ms): every all-reduce waits for "
            "it.");
}

TEST(Verdict, DdpOnOneGpuIsReportedWithItsCost) {
  const Verdict v = diagnose_file("ddp_one_gpu.json");
  EXPECT_EQ(v.bound, Bound::compute);
  EXPECT_EQ(v.advice, "try --precision bf16 (tensor cores; now fp32)");
  ASSERT_EQ(v.notes.size(), 1u);
  // No calibration steps in that (older) report: only the exposed part is known, and the sentence says so.
  EXPECT_EQ(v.notes[0],
            "DDP on one GPU costs at least 0.4% of the step (0.31 of 77.7 ms exposed communication; what overlap "
            "hides is not calibrated: give --calibrate-steps and a --warmup that holds them): run without --ddp.");
}

// A DDP step at world 1 whose communication is all hidden (exposed 0) but which runs 10.5 ms against a calibrated
// plain step of 9.8 ms: the hidden cost is reported, as parts that add up to the 0.7 ms difference.
RunReport hidden_cost_report(int world) {
  StepRecord step;
  step.phases.forward_ms = 3;
  step.phases.backward_ms = 6.5;
  step.phases.optimizer_ms = 1;
  step.phases.exposed_comm_ms = 0;
  step.phases.total_ms = 10.5;
  BucketRecord bucket;
  bucket.elements = 1 << 20;
  bucket.bytes = 4 << 20;
  bucket.launch_ms = bucket.start_ms = 6;
  bucket.end_ms = 6.2;  // 0.2 ms of hook work, all of it under the backward pass
  step.buckets.push_back(bucket);
  RunReport report = one_rank_report("NVIDIA H200", step);
  report.config.ddp = true;
  report.config.precision = "bf16";
  report.config.world = world;
  for (int r = 1; r < world; ++r) {
    RankRun peer = report.ranks.front();
    peer.info.rank = r;
    report.ranks.push_back(peer);
  }
  for (RankRun& rank : report.ranks) {
    rank.info.world_size = world;
    for (double plain_ms : {9.7, 9.8, 9.9}) {
      CalibrationRecord record;
      record.step = 2;
      record.plain = PhaseTimes{0, 0, 3, 5.8, 0, 0, 1, plain_ms};
      record.reduce_ms = 0.3;
      rank.calibration.push_back(record);
    }
  }
  return report;
}

TEST(Verdict, HiddenDdpCostAtWorldOneIsReportedAsTheSumOfItsParts) {
  const Verdict v = diagnose(hidden_cost_report(1));
  // 0.7 of 10.5 ms is 6.7%: below the 10% that makes it the bound, so a note.
  EXPECT_EQ(v.bound, Bound::compute);
  ASSERT_EQ(v.notes.size(), 1u);
  EXPECT_EQ(v.notes[0],
            "DDP on one GPU costs 6.7% of the step (0.70 of 10.5 ms: exposed communication 0.00 + compute slowed "
            "by DDP's work beside it 0.70; the hooks ran 0.20 ms under compute; calibrated plain step 9.8 ms): run "
            "without --ddp.");
  EXPECT_EQ(v.notes[0].find("costs 0.0%"), std::string::npos);
  RunReport cpu = hidden_cost_report(1);
  cpu.ranks.front().info.device_name = "cpu";
  EXPECT_EQ(diagnose(cpu).notes.at(0).rfind("DDP on one CPU rank costs 6.7% of the step (0.70 of 10.5 ms", 0), 0u);
}

// No measured step timed its buckets (CUDA samples them at progress lines): the sentence says the hooks' time is
// unknown instead of "ran 0.00 ms".
TEST(Verdict, UnsampledHookTimeIsNotStatedAsZero) {
  RunReport report = hidden_cost_report(1);
  for (StepRecord& step : report.ranks.front().steps) step.buckets.clear();
  const Verdict v = diagnose(report);
  ASSERT_EQ(v.notes.size(), 1u);
  EXPECT_EQ(v.notes[0].find("the hooks ran"), std::string::npos) << v.notes[0];
  EXPECT_NE(v.notes[0].find("the hooks' time under compute not sampled; calibrated plain step"), std::string::npos)
      << v.notes[0];
}

// Calibrated plain steps that happened to run slower than the DDP steps: no negative cost is offered as a saving.
TEST(Verdict, ADdpStepNoSlowerThanThePlainStepCostsNothingMeasurable) {
  RunReport report = hidden_cost_report(1);
  for (RankRun& rank : report.ranks)
    for (CalibrationRecord& record : rank.calibration) record.plain.total_ms += 1.0;  // 10.7..10.9 ms
  const Verdict v = diagnose(report);
  ASSERT_EQ(v.notes.size(), 1u);
  EXPECT_EQ(v.notes[0].rfind("DDP on one GPU costs nothing measurable (the DDP step, 10.5 ms, was no slower than "
                             "the calibrated plain step, 10.8 ms;", 0), 0u) << v.notes[0];
  EXPECT_NE(v.notes[0].find("run without --ddp."), std::string::npos) << v.notes[0];
}

TEST(Verdict, HiddenDdpCostAboveTenPercentBoundsTheStepAtWorldOne) {
  RunReport report = hidden_cost_report(1);
  for (CalibrationRecord& record : report.ranks.front().calibration) record.plain.total_ms -= 1.0;  // 8.8 ms
  const Verdict v = diagnose(report);
  EXPECT_EQ(v.bound, Bound::communication);
  EXPECT_NEAR(v.fraction, 1.7 / 10.5, 1e-12);
  EXPECT_EQ(v.text(),
            "DDP on one GPU costs 16% of the step (1.7 of 10.5 ms: exposed communication 0.00 + compute slowed by "
            "DDP's work beside it 1.7; the hooks ran 0.20 ms under compute; calibrated plain step 8.8 ms): run "
            "without --ddp.");
}

TEST(Verdict, DdpCostAtSeveralRanksIsANoteBesideTheBound) {
  const Verdict v = diagnose(hidden_cost_report(2));
  EXPECT_EQ(v.bound, Bound::compute);
  ASSERT_EQ(v.notes.size(), 1u);
  EXPECT_EQ(v.notes[0],
            "Against a step without the reducer, DDP costs 6.7% of the step (0.70 of 10.5 ms: exposed communication "
            "0.00 + compute slowed by DDP's work beside it 0.70; the hooks ran 0.20 ms under compute; calibrated "
            "plain step 9.8 ms).");
}

TEST(Verdict, IdleGpuBetweenKernelsIsLaunchBound) {
  const Verdict v = diagnose_file("launch_bound.json");
  EXPECT_EQ(v.bound, Bound::launch);
  EXPECT_NE(v.finding.find("The GPU is idle 72% of the step between kernels (44.4 of 61.5 ms; kernels run 16.8 ms)"),
            std::string::npos)
      << v.finding;
  EXPECT_NE(v.advice.find("--cuda-graph"), std::string::npos);
}

TEST(Verdict, LowShareOfPeakBandwidthIsNoted) {
  // The SHM run (28.2 GB/s busbw) judged against the NVLink peak at 94 MB (263 GB/s, interpolated) reaches 11%.
  const PeakTable nvlink = load_peak_table(testing::recorded_data("peak_nvlink_2xh200.json"));
  const Verdict v = diagnose_file("comm_bound_shm.json", &nvlink);
  ASSERT_EQ(v.notes.size(), 1u);
  EXPECT_NE(v.notes[0].find("reach only 11% of the link's measured peak"), std::string::npos) << v.notes[0];
  const PeakTable shm = load_peak_table(testing::recorded_data("peak_shm_2xh200.json"));
  EXPECT_TRUE(diagnose_file("comm_bound_shm.json", &shm).notes.empty());
}

TEST(Verdict, JsonHasBoundAndText) {
  const nlohmann::json j = diagnose_file("input_bound.json");
  EXPECT_EQ(j["bound"], "input");
  EXPECT_EQ(j["text"].get<std::string>().rfind("Waiting for input", 0), 0u);
}

TEST(Verdict, ComputeBoundOnTheCpuEngineAdvisesAGpu) {
  StepRecord step;
  step.phases.forward_ms = 40;
  step.phases.backward_ms = 55;
  step.phases.optimizer_ms = 5;
  step.phases.total_ms = 100;
  RunReport report = one_rank_report("cpu", step);
  report.config.precision = "fp32";
  report.config.ddp = false;
  const Verdict v = diagnose(report);
  EXPECT_EQ(v.bound, Bound::compute);
  EXPECT_NE(v.advice.find("--device cuda"), std::string::npos) << v.advice;
}

}  // namespace
}  // namespace ddpx
