// The trace checker (analysis/trace_check.hpp) on bad traces, each with the message a user reads, on good ones,
// and on files: a trace TraceWriter wrote passes, an unreadable or non-JSON file is an error naming it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "error_expect.hpp"
#include "analysis/trace_check.hpp"
#include "analysis/trace_writer.hpp"
#include "recorded_data.hpp"

namespace ddpx {
namespace {

using nlohmann::json;

json slice(const std::string& name, int pid, int tid, double ts, double dur) {
  return json{{"ph", "X"}, {"name", name}, {"pid", pid}, {"tid", tid}, {"ts", ts}, {"dur", dur}};
}

// A trace with rank 0's compute and comm threads named as TraceWriter names them, then `slices`.
json named_trace(const std::vector<json>& slices) {
  json events = json::array();
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", 0}, {"tid", 0}, {"args", {{"name", "rank 0"}}}});
  events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 0}, {"tid", 1}, {"args", {{"name", "compute"}}}});
  events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 0}, {"tid", 3}, {"args", {{"name", "comm"}}}});
  for (const json& s : slices) events.push_back(s);
  return json{{"traceEvents", events}};
}

TEST(TraceCheck, NestedAndTouchingSlicesPass) {
  const TraceCheck check = check_trace_events(named_trace({
      slice("Batch 1", 0, 1, 0, 100), slice("forward", 0, 1, 0, 40), slice("backward", 0, 1, 40, 60),
      slice("Batch 2", 0, 1, 100, 100),  // starts where Batch 1 ends
      slice("bucket 0", 0, 3, 50, 20), slice("bucket 1", 0, 3, 70, 20)}));
  EXPECT_TRUE(check.ok()) << check.problems.front();
  EXPECT_EQ(check.slices, 6u);
  EXPECT_EQ(check.tracks, 2u);
  EXPECT_EQ(check.processes, 1u);
}

TEST(TraceCheck, OverlappingSlicesOnOneTrackAreNamedWithTheirTrack) {
  // Two buckets of one comm stream that run at the same time: Perfetto cannot draw that.
  const std::vector<std::string> problems =
      check_trace(named_trace({slice("bucket 0", 0, 3, 50, 20), slice("bucket 1", 0, 3, 60, 20)}));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0],
            "rank 0 / comm (pid 0, tid 3): \"bucket 1\" (60.000-80.000 us) overlaps \"bucket 0\" (50.000-70.000 us) "
            "without nesting inside it");
}

TEST(TraceCheck, APhaseRunningPastItsStepIsBadNesting) {
  const std::vector<std::string> problems = check_trace(named_trace(
      {slice("Batch 7", 0, 1, 0, 100), slice("forward", 0, 1, 10, 40), slice("backward", 0, 1, 50, 70)}));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("rank 0 / compute (pid 0, tid 1): \"backward\" (50.000-120.000 us) overlaps \"Batch 7\" "
                             "(0.000-100.000 us)"),
            std::string::npos)
      << problems[0];
}

TEST(TraceCheck, SlicesOutOfTimeOrderAndStepsOutOfOrderAreNamed) {
  // The file lists Batch 2 before Batch 1 (not monotonic), and in time Batch 4 comes before Batch 3.
  const std::vector<std::string> problems = check_trace(
      named_trace({slice("Batch 2", 0, 1, 100, 50), slice("Batch 1", 0, 1, 0, 50), slice("Batch 4", 0, 1, 200, 50),
                   slice("Batch 3", 0, 1, 300, 50)}));
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0],
            "rank 0 / compute (pid 0, tid 1): \"Batch 1\" (starts 0.000 us) is listed after \"Batch 2\" (starts "
            "100.000 us): slices of one track must appear in time order");
  EXPECT_EQ(problems[1],
            "rank 0 / compute (pid 0, tid 1): \"Batch 3\" (starts 300.000 us) comes after \"Batch 4\" (starts "
            "200.000 us): steps must follow each other in increasing order");
}

TEST(TraceCheck, AZeroLengthStepAndTheNextStartingWithItMayBeListedEitherWay) {
  // TraceWriter lists the longer of two slices that start together first: Batch 6 before the empty Batch 5.
  EXPECT_EQ(check_trace(named_trace({slice("Batch 6", 0, 1, 100, 50), slice("Batch 5", 0, 1, 100, 0)})),
            std::vector<std::string>{});
  // The same step twice is not in order, however it is listed.
  EXPECT_EQ(check_trace(named_trace({slice("Batch 5", 0, 1, 0, 50), slice("Batch 5", 0, 1, 50, 50)})).size(), 1u);
}

// Writes `trace` to `path`, checks it streamed (check_trace_file) and parsed (check_trace_events): the same answer.
void expect_streamed_check_equals_parsed(const json& trace, const std::string& path) {
  std::ofstream(path) << trace.dump();
  const TraceCheck streamed = check_trace_file(path);
  const TraceCheck parsed = check_trace_events(trace);
  EXPECT_EQ(streamed.problems, parsed.problems);
  EXPECT_EQ(streamed.slices, parsed.slices);
  EXPECT_EQ(streamed.tracks, parsed.tracks);
  EXPECT_EQ(streamed.processes, parsed.processes);
}

TEST(TraceCheck, TracksWithoutMetadataAreNamedByPidAndTid) {
  const json trace = {{"traceEvents", {slice("a", 4, 9, 0, 10), slice("b", 4, 9, 5, 10)}}};
  const std::vector<std::string> problems = check_trace(trace);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].rfind("pid 4, tid 9: \"b\"", 0), 0u) << problems[0];
}

TEST(TraceCheck, AWrittenTraceFilePassesAndBadFilesAreErrorsNamingThem) {
  const RunReport report = load_run_report(testing::recorded_data("comm_bound_shm.json"));
  TraceWriter writer;
  writer.add_report(report);
  const std::string dir = ::testing::TempDir();
  const std::string path = dir + "ddpx_trace_check.json";
  writer.write(path);
  const TraceCheck check = check_trace_file(path);
  EXPECT_TRUE(check.ok()) << check.problems.front();
  EXPECT_EQ(check.processes, 2u);
  EXPECT_EQ(check.tracks, 6u);  // compute, copy, comm on 2 ranks
  EXPECT_GT(check.slices, 100u);

  testing::expect_error([&] { (void)check_trace_file(dir + "ddpx_no_such_trace.json"); },
                        {"cannot read trace", "ddpx_no_such_trace.json", "--check-trace"});
  const std::string garbage = dir + "ddpx_trace_garbage.json";
  std::ofstream(garbage) << "{\"traceEvents\": [";
  testing::expect_error([&] { (void)check_trace_file(garbage); }, {"ddpx_trace_garbage.json", "not valid JSON"});
  std::filesystem::remove(garbage);
  std::filesystem::remove(path);
}

// Issue 37 item 7: `report --check-trace` on a trace of a million events ran past 60 s building the whole document.
// The file is streamed now (Note [Streaming trace check]); it must say exactly what the checker of a parsed trace
// says, on good and bad traces alike, and take a trace of 200,000 events (as a test, within ctest's bound).
TEST(TraceCheck, TheStreamingFileCheckSaysWhatTheParsedCheckSays) {
  const std::string path = ::testing::TempDir() + "ddpx_trace_stream.json";
  std::vector<json> bad_slices = {slice("Batch 2", 0, 1, 0, 10), slice("Batch 1", 0, 1, 10, 10),
                                  slice("forward", 0, 1, 15, 10), slice("comm", 0, 3, 5, -1)};
  json odd = named_trace(bad_slices);
  odd["traceEvents"].push_back(7);
  odd["traceEvents"].push_back(json::array({1, 2}));
  odd["traceEvents"].push_back(
      {{"ph", "X"}, {"pid", 1}, {"tid", 1}, {"name", {{"nested", true}}}, {"ts", 1}, {"dur", 1}});
  odd["traceEvents"].push_back({{"ph", 5}, {"pid", 1}, {"tid", 1}});
  odd["traceEvents"].push_back({{"ph", "X"}, {"pid", 1.5}, {"tid", 1}});
  odd["traceEvents"].push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 1}, {"tid", 1}, {"args", {{"name", 3}}}});
  for (const json& trace : {named_trace({slice("Batch 1", 0, 1, 0, 10), slice("forward", 0, 1, 1, 3)}), odd,
                            json{{"traceEvents", 3}}, json::array(), json{{"other", json::array()}}}) {
    SCOPED_TRACE(trace.dump().substr(0, 200));
    expect_streamed_check_equals_parsed(trace, path);
  }
  {
    std::ofstream out(path);
    out << "{\"traceEvents\": [";
    for (int i = 0; i < 200000; ++i)
      out << (i ? "," : "") << "{\"ph\":\"X\",\"pid\":" << i % 8 << ",\"tid\":1,\"name\":\"Batch " << i / 8
          << "\",\"ts\":" << (i / 8) * 10 << ",\"dur\":5,\"args\":{\"step\":" << i << "}}";
    out << "]}";
  }
  const TraceCheck large = check_trace_file(path);
  EXPECT_TRUE(large.ok()) << large.problems.front();
  EXPECT_EQ(large.slices, 200000u);
  EXPECT_EQ(large.processes, 8u);
  std::filesystem::remove(path);
}

// Issue 40 point 5: the Trace Event Format's array form (PyTorch's legacy profiler writes it) and string pids and
// tids (PyTorch's profiler writes "Spans" and the like) are accepted, streamed and parsed alike; a string names its
// track quoted, and never the same track as an integer.
TEST(TraceCheck, TheArrayFormAndStringPidsAndTidsAreAccepted) {
  const auto string_slice = [](const std::string& name, const std::string& pid, const std::string& tid, double ts,
                               double dur) {
    return json{{"ph", "X"}, {"name", name}, {"pid", pid}, {"tid", tid}, {"ts", ts}, {"dur", dur}};
  };
  const json good = json::array({string_slice("ProfilerStep#2", "Spans", "PyTorch Profiler", 0, 100),
                                 string_slice("forward", "Spans", "PyTorch Profiler", 10, 20),
                                 slice("aten::mm", 7, 7, 5, 50), slice("aten::add", 7, 7, 60, 5)});
  const json bad = json::array({string_slice("a", "Spans", "x", 0, 10), string_slice("b", "Spans", "x", 5, 10),
                                slice("c", 7, 7, 0, 10)});
  const std::string path = ::testing::TempDir() + "ddpx_trace_array_form.json";
  for (const json& trace : {good, bad}) {
    expect_streamed_check_equals_parsed(trace, path);
  }
  const TraceCheck good_check = check_trace_events(good);
  EXPECT_TRUE(good_check.ok()) << good_check.problems.front();
  EXPECT_EQ(good_check.slices, 4u);
  EXPECT_EQ(good_check.tracks, 2u);
  EXPECT_EQ(good_check.processes, 2u);
  const std::vector<std::string> problems = check_trace(bad);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].rfind("pid \"Spans\", tid \"x\": \"b\"", 0), 0u) << problems[0];
  // Neither form, and a pid that is neither an integer nor a string, are still named.
  EXPECT_NE(check_trace(json{{"events", json::array()}}).front().find("nor an array of events"), std::string::npos);
  const std::vector<std::string> float_pid = check_trace(json::array({{{"ph", "X"}, {"pid", 1.5}, {"tid", 1}}}));
  ASSERT_EQ(float_pid.size(), 1u);
  EXPECT_NE(float_pid[0].find("integer or string \"pid\""), std::string::npos) << float_pid[0];
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ddpx
