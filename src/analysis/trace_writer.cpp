// Chrome-trace / Perfetto writer, merger and checker (see trace_writer.hpp).
#include "analysis/trace_writer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <set>

#include "core/error.hpp"
#include "core/json_parse.hpp"
#include "io/output_file.hpp"
#include "analysis/comm_stats.hpp"

namespace ddpx {

using nlohmann::json;

namespace {

constexpr int kComputeTid = 1;
constexpr int kCopyTid = 2;
constexpr int kCommTid = 3;

int64_t to_ns(double ms) { return std::llround(ms * 1e6); }

json metadata(const char* what, int pid, int tid, const std::string& name) {
  return json{{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

json sort_index(const char* what, int pid, int tid, int index) {
  return json{{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", {{"sort_index", index}}}};
}

}  // namespace

void TraceWriter::add_process(int pid) {
  DDPX_REQUIRE(pid >= 0, "trace: rank must be >= 0, got {}", pid);
  auto& threads = threads_[pid];
  if (threads.empty()) {
    threads["compute"] = kComputeTid;
    threads["copy"] = kCopyTid;
    threads["comm"] = kCommTid;
  }
}

int TraceWriter::thread_id(int pid, const std::string& thread) {
  add_process(pid);
  auto& threads = threads_[pid];
  auto it = threads.find(thread);
  if (it != threads.end()) return it->second;
  const int tid = static_cast<int>(threads.size()) + 1;
  threads[thread] = tid;
  return tid;
}

void TraceWriter::add_event(int pid, const std::string& thread, const std::string& name, double start_ms,
                            double duration_ms, json args) {
  DDPX_REQUIRE(duration_ms >= 0, "trace event '{}' on rank {}: duration must be >= 0 ms, got {}", name, pid,
               duration_ms);
  events_.push_back(Event{pid, thread_id(pid, thread), name, to_ns(start_ms), to_ns(duration_ms), std::move(args)});
}

void TraceWriter::add_rank(const RankInfo& info, const std::vector<StepRecord>& steps) {
  const int pid = info.rank;
  DDPX_REQUIRE(ranks_added_.insert(pid).second, "trace: rank {} was added twice; every rank's steps go in once",
               pid);
  add_process(pid);
  // Where the last event drawn on each thread ends: a step, copy or bucket whose recorded times overlap the one
  // before it on its thread (a CUDA step's device time can run past the next step's host start; a damaged file
  // can say anything) starts where that one ends, so that every thread stays well nested. Sums saturate.
  std::map<int, int64_t> thread_end;
  const auto saturating_add = [](int64_t a, int64_t b) {
    int64_t sum = 0;
    return __builtin_add_overflow(a, b, &sum) ? (b > 0 ? INT64_MAX : INT64_MIN) : sum;
  };
  const auto place = [&](int tid, int64_t start, int64_t duration) {
    const auto it = thread_end.find(tid);
    if (it != thread_end.end()) start = std::max(start, it->second);
    thread_end[tid] = saturating_add(start, duration);
    return start;
  };
  for (const StepRecord& step : steps) {
    const PhaseTimes& t = step.phases;
    // See Note [One clock for all ranks]: a CUDA step is drawn where the GPU ran it (device_start_ms, from the
    // step's events), as long as its device phases; the host's wait for the batch goes on the "host" thread.
    const bool on_device = step.device_start_ms.has_value();
    const double device_ms = t.h2d_copy_ms + t.forward_ms + t.backward_ms + t.exposed_comm_ms + t.optimizer_ms;
    const int64_t step_duration = to_ns(std::max(on_device ? device_ms : t.total_ms, 0.0));
    const int64_t step_start =
        place(kComputeTid, to_ns(on_device ? *step.device_start_ms : step.start_ms), step_duration);
    const int64_t step_end = saturating_add(step_start, step_duration);
    json step_args{{"step", step.step}, {"total_ms", t.total_ms}};
    if (on_device) step_args["timeline"] = "device";
    events_.push_back(Event{pid, kComputeTid, fmt::format("Batch {}", step.step), step_start, step_end - step_start,
                            std::move(step_args)});
    if (on_device && t.data_wait_ms > 0) {
      const int tid = thread_id(pid, "host");
      const int64_t wait_duration = to_ns(t.data_wait_ms);
      const int64_t wait_start = place(tid, to_ns(step.start_ms), wait_duration);
      events_.push_back(Event{pid, tid, "get batch (host)", wait_start, wait_duration,
                              json{{"step", step.step}}});
    }
    // The seed's phases, back to back from the step start, clipped to the step.
    const double get_batch_ms = on_device ? t.h2d_copy_ms : t.data_wait_ms + t.h2d_copy_ms;
    const std::pair<const char*, double> phases[] = {{"get batch", get_batch_ms},
                                                     {"forward", t.forward_ms},
                                                     {"backward", t.backward_ms},
                                                     {"wait for gradients", t.exposed_comm_ms},
                                                     {"optimizer step", t.optimizer_ms}};
    int64_t cursor = step_start;
    for (const auto& [name, ms] : phases) {
      const int64_t begin = std::min(cursor, step_end);
      const int64_t end = std::min(saturating_add(cursor, to_ns(std::max(ms, 0.0))), step_end);
      cursor = end;
      if (end > begin) events_.push_back(Event{pid, kComputeTid, name, begin, end - begin, json::object()});
    }
    if (t.h2d_copy_ms > 0) {
      const int64_t copy_duration = to_ns(t.h2d_copy_ms);
      const int64_t copy_offset = on_device ? 0 : to_ns(t.data_wait_ms);
      const int64_t copy_start = place(kCopyTid, saturating_add(step_start, copy_offset), copy_duration);
      events_.push_back(Event{pid, kCopyTid, "h2d copy", copy_start, copy_duration, json::object()});
    }
    for (const BucketRecord& bucket : step.buckets) {
      const double ms = bucket.end_ms - bucket.start_ms;
      json args{{"bytes", bucket.bytes},
                {"hook", bucket.hook},
                {"busbw_GBps", busbw_GBps(parse_collective(bucket.collective), info.world_size, bucket.bytes, ms)},
                {"elements", bucket.elements},
                {"queued_ms", bucket.start_ms - bucket.launch_ms}};
      const std::string thread = bucket.stream.empty() ? "comm" : bucket.stream;
      const int tid = thread_id(pid, thread);
      const int64_t bucket_start = place(tid, saturating_add(step_start, to_ns(bucket.start_ms)), to_ns(ms));
      events_.push_back(Event{pid, tid, fmt::format("bucket {}", bucket.index), bucket_start, to_ns(ms),
                              std::move(args)});
    }
  }
}

void TraceWriter::add_report(const RunReport& report) {
  for (const RankRun& rank : report.ranks) add_rank(rank.info, rank.steps);
}

json TraceWriter::to_json() const {
  json events = json::array();
  for (const auto& [pid, threads] : threads_) {
    events.push_back(metadata("process_name", pid, 0, fmt::format("rank {}", pid)));
    events.push_back(sort_index("process_sort_index", pid, 0, pid));
    for (const auto& [name, tid] : threads) {
      events.push_back(metadata("thread_name", pid, tid, name));
      events.push_back(sort_index("thread_sort_index", pid, tid, tid));
    }
  }
  std::vector<const Event*> sorted;
  for (const Event& e : events_) sorted.push_back(&e);
  // Parents before children: by thread, start, then longer first.
  std::stable_sort(sorted.begin(), sorted.end(), [](const Event* a, const Event* b) {
    if (a->pid != b->pid) return a->pid < b->pid;
    if (a->tid != b->tid) return a->tid < b->tid;
    if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns;
    return a->duration_ns > b->duration_ns;
  });
  for (const Event* e : sorted) {
    json event{{"ph", "X"},
               {"name", e->name},
               {"pid", e->pid},
               {"tid", e->tid},
               {"ts", static_cast<double>(e->start_ns) / 1e3},
               {"dur", static_cast<double>(e->duration_ns) / 1e3}};
    if (!e->args.empty()) event["args"] = e->args;
    events.push_back(std::move(event));
  }
  return json{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
}

void TraceWriter::write(const std::string& path) const {
  try {
    write_output_text(path, "--trace", to_json().dump() + "\n");  // atomic: never a truncated trace
  } catch (const Error& e) {
    fail("writing trace '{}' (--trace) failed; an earlier file there is unchanged: {}", path, e.what());
  }
}

json merge_traces(const std::vector<json>& traces) {
  json events = json::array();
  std::set<int64_t> seen_pids;
  for (size_t i = 0; i < traces.size(); ++i) {
    const json& trace = traces[i];
    DDPX_REQUIRE(trace.is_object() && trace.contains("traceEvents") && trace["traceEvents"].is_array(),
                 "trace merge: input {} is not a trace (no \"traceEvents\" array)", i);
    std::set<int64_t> pids;
    for (const json& e : trace["traceEvents"]) {
      if (e.is_object() && e.contains("pid") && e["pid"].is_number_integer()) pids.insert(e["pid"].get<int64_t>());
      events.push_back(e);
    }
    for (int64_t pid : pids) {
      DDPX_REQUIRE(seen_pids.insert(pid).second,
                   "trace merge: rank {} (pid {}) appears in more than one input (input {} again); pass each "
                   "rank's trace once",
                   pid, pid, i);
    }
  }
  return json{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
}

void merge_trace_files(const std::vector<std::string>& inputs, const std::string& output) {
  std::vector<json> traces;
  for (const std::string& path : inputs) {
    std::string text;
    try {
      text = read_small_file(path, uint64_t{4} << 30, "trace");
    } catch (const Error& e) {
      fail("cannot open trace '{}' for merging: check the path: {}", path, e.what());
    }
    try {
      traces.push_back(parse_json(text, "trace '" + path + "'"));
    } catch (const json::exception& e) {
      fail("trace '{}' is not valid JSON: {}", path, e.what());
    }
  }
  json merged = merge_traces(traces);
  try {
    write_output_text(output, "--trace", merged.dump() + "\n");
  } catch (const Error& e) {
    fail("writing merged trace '{}' failed; an earlier file there is unchanged: {}", output, e.what());
  }
}

}  // namespace ddpx
