// TraceWriter: a Chrome-trace / Perfetto timeline of measured steps, one process per rank.
// Guarantees:
//  - Output is {"traceEvents": [...], "displayTimeUnit": "ms"}: "M" metadata events name each process "rank k"
//    (pid = k) and its threads "compute" (tid 1), "copy" (tid 2), "comm" (tid 3; further comm streams get tid 4,
//    5, ... named after BucketRecord::stream); "X" complete events carry ts and dur in microseconds.
//  - On every thread, events are well nested: each step is "Batch i" on the compute thread with the seed's phases
//    "get batch", "forward", "backward", "wait for gradients" (exposed comm, when > 0) and "optimizer step" laid
//    out back to back inside it and clipped to it; zero-length phases are left out. Each bucket is one event
//    "bucket k" on its comm thread (start to end) with args {bytes, hook, busbw_GBps, elements, queued_ms}.
//    A step, copy or bucket whose recorded times overlap the previous one on its thread is drawn from where that
//    one ends (its duration kept), so that any report a reader accepted gives a trace check_trace() accepts.
//  - Steps with a device start (StepRecord::device_start_ms: CUDA) are laid out from the GPU's event times: "Batch
//    i" starts where the GPU began the step and lasts its device phases (h2d copy wait to optimizer end); "get
//    batch" on the compute thread is then the copy wait only, and the host's wait for the loader is "get batch
//    (host)" on a "host" thread at the host's step start. Buckets are drawn from the step's start on either
//    timeline. Zeroing the gradients runs first on the GPU but is counted (and drawn) in "optimizer step".
//  - Every rank's times are already on one clock (rank 0's; see Note [One clock for all ranks]), so the
//    processes of one trace line up: step k of every rank overlaps in time, as their all-reduces do.
//  - Times are rounded to whole nanoseconds before they are written, so nesting is exact, not approximate.
//  - check_trace() (analysis/trace_check.hpp) validates what the viewers need; merge_traces() refuses two inputs
//    that claim the same rank.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "report/step_record.hpp"
#include "analysis/trace_check.hpp"

namespace ddpx {

class TraceWriter {
 public:
  // Adds one rank's steps as process info.rank; busbw of each bucket uses info.world_size. A rank added twice is
  // an error naming it.
  void add_rank(const RankInfo& info, const std::vector<StepRecord>& steps);
  // Every rank of a run report.
  void add_report(const RunReport& report);
  // A single complete event on a named thread of process pid (the thread is created on first use).
  void add_event(int pid, const std::string& thread, const std::string& name, double start_ms, double duration_ms,
                 nlohmann::json args = nlohmann::json::object());

  nlohmann::json to_json() const;
  void write(const std::string& path) const;  // errors name the file

 private:
  struct Event {
    int pid = 0;
    int tid = 0;
    std::string name;
    int64_t start_ns = 0;
    int64_t duration_ns = 0;
    nlohmann::json args;
  };
  int thread_id(int pid, const std::string& thread);
  void add_process(int pid);

  std::map<int, std::map<std::string, int>> threads_;  // pid -> thread name -> tid
  std::set<int> ranks_added_;                          // pids filled by add_rank
  std::vector<Event> events_;
};

// One trace holding the events of all inputs (each typically one rank's file). Throws ddpx::Error naming the pid
// when two inputs hold events of the same process, or when an input is not a trace.
nlohmann::json merge_traces(const std::vector<nlohmann::json>& traces);
// Reads the input files, merges them and writes output; errors name the file.
void merge_trace_files(const std::vector<std::string>& inputs, const std::string& output);

}  // namespace ddpx
