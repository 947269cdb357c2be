// Trace writer: the Chrome-trace shape viewers need, correct nesting, per-bucket args, merging ranks.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "core/error.hpp"
#include "analysis/comm_stats.hpp"
#include "analysis/trace_writer.hpp"
#include "recorded_data.hpp"

namespace ddpx {
namespace {

using nlohmann::json;

std::vector<json> events_named(const json& trace, const std::string& name) {
  std::vector<json> out;
  for (const json& e : trace["traceEvents"])
    if (e["name"] == name) out.push_back(e);
  return out;
}

TEST(TraceWriter, RecordedRunGivesAWellFormedTrace) {
  const RunReport report = load_run_report(testing::recorded_data("comm_bound_shm.json"));
  TraceWriter writer;
  writer.add_report(report);
  const json trace = writer.to_json();
  EXPECT_EQ(check_trace(trace), std::vector<std::string>{});
  EXPECT_EQ(trace["displayTimeUnit"], "ms");

  // Processes "rank 0" and "rank 1"; threads compute / copy / comm on each.
  std::set<std::string> process_names, thread_names;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] != "M") continue;
    if (e["name"] == "process_name") process_names.insert(e["args"]["name"].get<std::string>());
    if (e["name"] == "thread_name")
      thread_names.insert(fmt::format("{}:{}", e["pid"].get<int>(), e["args"]["name"].get<std::string>()));
  }
  EXPECT_EQ(process_names, (std::set<std::string>{"rank 0", "rank 1"}));
  EXPECT_EQ(thread_names, (std::set<std::string>{"0:comm", "0:compute", "0:copy", "1:comm", "1:compute", "1:copy"}));

  // The seed's names, one per step and rank: 5 steps x 2 ranks.
  for (const char* name : {"Batch 10", "Batch 14"}) EXPECT_EQ(events_named(trace, name).size(), 2u) << name;
  for (const char* name : {"get batch", "forward", "backward", "wait for gradients", "optimizer step", "h2d copy"})
    EXPECT_EQ(events_named(trace, name).size(), 10u) << name;
  EXPECT_EQ(events_named(trace, "bucket 0").size(), 10u);
  EXPECT_EQ(events_named(trace, "bucket 12").size(), 10u);
}

TEST(TraceWriter, PhasesNestInsideTheirStepAndBucketsCarryArgs) {
  const RunReport report = load_run_report(testing::recorded_data("comm_bound_shm.json"));
  const StepRecord& step = report.ranks[1].steps[2];
  TraceWriter writer;
  writer.add_rank(report.ranks[1].info, {step});
  const json trace = writer.to_json();
  const json batch = events_named(trace, fmt::format("Batch {}", step.step)).at(0);
  const json forward = events_named(trace, "forward").at(0);
  EXPECT_EQ(batch["pid"], 1);
  EXPECT_EQ(batch["tid"], 1);  // compute
  EXPECT_NEAR(batch["ts"].get<double>(), step.start_ms * 1e3, 1e-3);
  EXPECT_NEAR(batch["dur"].get<double>(), step.phases.total_ms * 1e3, 1e-3);
  // forward starts after get batch (data wait + copy) and lasts forward_ms.
  EXPECT_NEAR(forward["ts"].get<double>(),
              (step.start_ms + step.phases.data_wait_ms + step.phases.h2d_copy_ms) * 1e3, 2e-3);
  EXPECT_NEAR(forward["dur"].get<double>(), step.phases.forward_ms * 1e3, 1e-3);

  const BucketRecord& bucket = step.buckets[4];
  const json event = events_named(trace, "bucket 4").at(0);
  EXPECT_EQ(event["tid"], 3);  // comm
  EXPECT_NEAR(event["ts"].get<double>(), (step.start_ms + bucket.start_ms) * 1e3, 1e-3);
  EXPECT_EQ(event["args"]["bytes"], bucket.bytes);
  EXPECT_EQ(event["args"]["hook"], "allreduce");
  EXPECT_NEAR(event["args"]["busbw_GBps"].get<double>(),
              busbw_GBps(Collective::all_reduce, 2, bucket.bytes, bucket.end_ms - bucket.start_ms), 1e-9);
}

TEST(TraceWriter, PhasesLongerThanTheStepAreClippedNotOverlapping) {
  StepRecord step;
  step.step = 3;
  step.phases = PhaseTimes{0, 0, 5, 8, 0, 4, 2, 15};  // parts 19 ms in a 15 ms step
  TraceWriter writer;
  writer.add_rank(RankInfo{0, "", "fp32", 1, ""}, {step});
  const json trace = writer.to_json();
  EXPECT_EQ(check_trace(trace), std::vector<std::string>{});
  EXPECT_EQ(events_named(trace, "get batch").size(), 0u);       // zero length: left out
  EXPECT_EQ(events_named(trace, "optimizer step").size(), 0u);  // starts at the step end: nothing left to draw
  const json wait = events_named(trace, "wait for gradients").at(0);
  EXPECT_NEAR(wait["ts"].get<double>(), 13000.0, 1e-9);  // after forward (5) and backward (8)
  EXPECT_NEAR(wait["dur"].get<double>(), 2000.0, 1e-9);  // 4 ms clipped to the step's end at 15 ms
}

// Found by tests/fuzz/fuzz_run_report: two steps of one rank whose recorded times overlap (a missing start_ms
// reads as 0) gave a trace whose phases overlapped without nesting. Each overlapping event now starts where the
// previous one on its thread ends.
TEST(TraceWriter, OverlappingStepsCopiesAndBucketsAreDrawnOneAfterAnother) {
  StepRecord first, second;
  first.step = 10;
  first.phases = PhaseTimes{2, 1, 20, 40, 0, 0, 1, 80};
  first.buckets = {{0, 1024, 256, "allreduce", "all_reduce", 30, 31, 50, "comm"},
                   {1, 1024, 256, "allreduce", "all_reduce", 35, 40, 60, "comm"}};  // starts inside bucket 0
  second = first;
  second.step = 11;
  second.start_ms = 10;  // inside the first step
  second.buckets.clear();
  TraceWriter writer;
  writer.add_rank(RankInfo{0, "", "fp32", 1, ""}, {first, second});
  const json trace = writer.to_json();
  EXPECT_EQ(check_trace(trace), std::vector<std::string>{});
  const json batch = events_named(trace, "Batch 11").at(0);
  EXPECT_NEAR(batch["ts"].get<double>(), 80000.0, 1e-9);  // where Batch 10 ends
  EXPECT_NEAR(batch["dur"].get<double>(), 80000.0, 1e-9);
  const json bucket = events_named(trace, "bucket 1").at(0);
  EXPECT_NEAR(bucket["ts"].get<double>(), 50000.0, 1e-9);  // where bucket 0 (31 to 50 ms) ends
  EXPECT_NEAR(bucket["dur"].get<double>(), 20000.0, 1e-9);
}

// A CUDA step is drawn where the GPU ran it (device_start_ms), as long as its device phases; the host's wait for
// the batch goes on the "host" thread at the host's start of the step. The host runs ahead of the GPU: step 6's
// host start (14 ms) lies inside step 5's device time (12 to 25 ms), which a host-timed layout would overlap.
TEST(TraceWriter, DeviceTimedStepsAreLaidOutFromTheirDeviceStart) {
  RankInfo info;
  info.rank = 0;
  info.world_size = 2;
  std::vector<StepRecord> steps(2);
  steps[0].step = 5;
  steps[0].start_ms = 10;
  steps[0].device_start_ms = 12;
  steps[0].phases = PhaseTimes{3, 0.5, 4, 6, 5, 1, 1.5, 16};  // device part: 0.5 + 4 + 6 + 1 + 1.5 = 13 ms
  BucketRecord bucket;
  bucket.index = 0;
  bucket.bytes = 4 << 20;
  bucket.launch_ms = 4.5;
  bucket.start_ms = 5;
  bucket.end_ms = 10;
  steps[0].buckets = {bucket};
  steps[1] = steps[0];
  steps[1].step = 6;
  steps[1].start_ms = 14;
  steps[1].device_start_ms = 25;
  TraceWriter writer;
  writer.add_rank(info, steps);
  const json trace = writer.to_json();
  EXPECT_EQ(check_trace(trace), std::vector<std::string>{});
  const json batch5 = events_named(trace, "Batch 5").at(0);
  EXPECT_NEAR(batch5["ts"].get<double>(), 12000.0, 1e-9);
  EXPECT_NEAR(batch5["dur"].get<double>(), 13000.0, 1e-9);
  EXPECT_EQ(batch5["args"]["timeline"], "device");
  EXPECT_NEAR(events_named(trace, "Batch 6").at(0)["ts"].get<double>(), 25000.0, 1e-9);
  // On the compute thread "get batch" is the copy wait only; forward follows it.
  const json get_batch = events_named(trace, "get batch").at(0);
  EXPECT_NEAR(get_batch["ts"].get<double>(), 12000.0, 1e-9);
  EXPECT_NEAR(get_batch["dur"].get<double>(), 500.0, 1e-9);
  EXPECT_NEAR(events_named(trace, "forward").at(0)["ts"].get<double>(), 12500.0, 1e-9);
  // The host's wait: at the host's step starts, on their own thread.
  const std::vector<json> host_waits = events_named(trace, "get batch (host)");
  ASSERT_EQ(host_waits.size(), 2u);
  EXPECT_NEAR(host_waits[0]["ts"].get<double>(), 10000.0, 1e-9);
  EXPECT_NEAR(host_waits[0]["dur"].get<double>(), 3000.0, 1e-9);
  EXPECT_NEAR(host_waits[1]["ts"].get<double>(), 14000.0, 1e-9);
  EXPECT_NE(host_waits[0]["tid"], batch5["tid"]);
  // Buckets from the device start, with bytes and bus bandwidth: 4 MiB in 5 ms over 2 ranks.
  const std::vector<json> buckets = events_named(trace, "bucket 0");
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_NEAR(buckets[0]["ts"].get<double>(), 17000.0, 1e-9);
  EXPECT_NEAR(buckets[1]["ts"].get<double>(), 30000.0, 1e-9);
  EXPECT_EQ(buckets[0]["args"]["bytes"], 4 << 20);
  EXPECT_NEAR(buckets[0]["args"]["busbw_GBps"].get<double>(),
              busbw_GBps(Collective::all_reduce, 2, 4 << 20, 5.0), 1e-9);
}

TEST(TraceWriter, CheckerFindsBrokenNestingAndMissingFields) {
  json bad = {{"traceEvents",
               {{{"ph", "X"}, {"name", "a"}, {"pid", 0}, {"tid", 1}, {"ts", 0.0}, {"dur", 10.0}},
                {{"ph", "X"}, {"name", "b"}, {"pid", 0}, {"tid", 1}, {"ts", 5.0}, {"dur", 10.0}},
                {{"ph", "X"}, {"name", "c"}, {"pid", 0}, {"tid", 2}, {"ts", 5.0}, {"dur", 10.0}},
                {{"ph", "X"}, {"name", "d"}, {"pid", 0}, {"tid", 1}, {"ts", 20.0}}}}};
  const std::vector<std::string> problems = check_trace(bad);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(problems[0].find("\"dur\""), std::string::npos) << problems[0];
  EXPECT_NE(problems[1].find("\"b\""), std::string::npos) << problems[1];  // b overlaps a on tid 1; c is alone
  // The array form is a trace (issue 40 point 5: an empty one has nothing wrong); a number is neither form.
  EXPECT_TRUE(check_trace(json::array()).empty());
  EXPECT_EQ(check_trace(json(3)).size(), 1u);
}

// Found by tests/fuzz/fuzz_trace_merge: an "X" event whose name is not a string made check_trace throw
// nlohmann's type_error instead of reporting the problem.
TEST(TraceWriter, CheckerReportsANameThatIsNotAString) {
  const json numbered = {
      {"traceEvents", {{{"ph", "X"}, {"name", 5}, {"pid", 0}, {"tid", 0}, {"ts", 0.0}, {"dur", 1.0}}}}};
  std::vector<std::string> problems;
  ASSERT_NO_THROW(problems = check_trace(numbered));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("\"name\""), std::string::npos) << problems[0];
}

TEST(TraceWriter, MergesRanksAndRefusesDuplicates) {
  const RunReport report = load_run_report(testing::recorded_data("comm_bound_nvlink.json"));
  TraceWriter rank0, rank1;
  rank0.add_rank(report.ranks[0].info, report.ranks[0].steps);
  rank1.add_rank(report.ranks[1].info, report.ranks[1].steps);
  const std::string dir = ::testing::TempDir();
  rank0.write(dir + "ddpx_trace_rank0.json");
  rank1.write(dir + "ddpx_trace_rank1.json");
  merge_trace_files({dir + "ddpx_trace_rank0.json", dir + "ddpx_trace_rank1.json"}, dir + "ddpx_trace.json");
  std::ifstream in(dir + "ddpx_trace.json");
  const json merged = json::parse(in);
  EXPECT_EQ(check_trace(merged), std::vector<std::string>{});
  EXPECT_EQ(merged["traceEvents"].size(), rank0.to_json()["traceEvents"].size() * 2);
  EXPECT_EQ(events_named(merged, "process_name").size(), 2u);
  try {
    merge_traces({rank0.to_json(), rank0.to_json()});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
  }
  EXPECT_THROW(rank0.add_rank(report.ranks[0].info, {}), Error);  // rank 0 twice
  std::remove((dir + "ddpx_trace_rank0.json").c_str());
  std::remove((dir + "ddpx_trace_rank1.json").c_str());
  std::remove((dir + "ddpx_trace.json").c_str());
}

}  // namespace
}  // namespace ddpx
