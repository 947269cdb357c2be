// The trace checker: whether a Chrome-trace / Perfetto JSON file is a timeline the viewers draw as written, for
// traces that ddpx wrote (TraceWriter, `ddpx train --trace`, `ddpx report --trace`) and any other in that format.
// Guarantees:
//  - Checks: a top-level object with a "traceEvents" array, or a top-level array of events (the Trace Event
//    Format's two forms; PyTorch's legacy profiler writes the second); every event has a string "ph" and an
//    integer or string "pid" and "tid" (PyTorch writes strings such as "Spans"); every "X" (complete) event has a string "name", numeric "ts" and "dur" >= 0. Then, on every track
//    (one pid and tid): slices are well nested (one that starts inside another ends inside it: no two slices of
//    one track partly overlap, which Perfetto does not draw), they appear in the file in time order
//    (monotonic "ts"), and slices named "Batch N" follow each other in increasing N.
//  - Each problem is one sentence naming the track ("rank 1 / comm (pid 1, tid 3)" from the trace's own
//    process_name and thread_name metadata), the slices by name and their times in microseconds, and what is
//    wrong. Comparisons allow 1 ns, the resolution TraceWriter prints.
//  - Never throws on a bad trace: problems are returned (the first 10,000, then "... and N more problems").
//    check_trace_file() throws ddpx::Error (naming the file) only when the file cannot be read (a regular file of
//    at most 4 GiB) or is not JSON. It streams the file (Note [Streaming trace check]): time and memory grow with
//    the slices kept, not with the document, so a trace of a million events is checked in seconds.
#pragma once
#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace ddpx {

struct TraceCheck {
  std::vector<std::string> problems;  // empty: the trace is fine
  size_t slices = 0;                  // "X" events with valid times
  size_t tracks = 0;                  // (pid, tid) pairs holding slices
  size_t processes = 0;               // pids holding slices
  bool ok() const { return problems.empty(); }
};

// The problems of a parsed trace (see above), with counts.
TraceCheck check_trace_events(const nlohmann::json& trace);
// Only the problems; empty when the trace is fine.
std::vector<std::string> check_trace(const nlohmann::json& trace);
// Reads and checks a trace file (what `ddpx report --check-trace FILE` runs).
TraceCheck check_trace_file(const std::string& path);

}  // namespace ddpx
