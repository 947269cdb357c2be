// The trace checker (see trace_check.hpp).
#include "profile/trace_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <set>
#include <utility>

#include "core/error.hpp"
#include "core/json_parse.hpp"
#include "io/posix_file.hpp"

namespace ddpx {

using nlohmann::json;

namespace {

constexpr double kSlackUs = 1e-3;  // 1 ns: TraceWriter prints ts/dur from whole nanoseconds
constexpr uint64_t kMaxTraceBytes = uint64_t{4} << 30;

using Track = std::pair<int64_t, int64_t>;  // pid, tid

struct Slice {
  double start = 0, end = 0;
  std::string name;
};

std::optional<std::string> metadata_name(const json& e) {
  if (!e.contains("args") || !e["args"].is_object() || !e["args"].contains("name") || !e["args"]["name"].is_string())
    return std::nullopt;
  return e["args"]["name"].get<std::string>();
}

// "Batch 12" -> 12; anything else (other names, no digits, more than 18 of them) -> nullopt.
std::optional<int64_t> batch_number(const std::string& name) {
  constexpr std::string_view prefix = "Batch ";
  if (name.size() <= prefix.size() || name.size() > prefix.size() + 19 || name.compare(0, prefix.size(), prefix) != 0)
    return std::nullopt;
  size_t i = prefix.size();
  const bool negative = name[i] == '-';
  if (negative) ++i;
  if (i == name.size() || name.size() - i > 18) return std::nullopt;  // 18 digits fit an int64
  int64_t value = 0;
  for (; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    value = value * 10 + (name[i] - '0');
  }
  return negative ? -value : value;
}

}  // namespace

TraceCheck check_trace_events(const json& trace) {
  TraceCheck check;
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array()) {
    check.problems.push_back("the trace is not an object with a \"traceEvents\" array");
    return check;
  }
  std::map<Track, std::vector<Slice>> by_track;  // in file order
  std::map<int64_t, std::string> process_names;
  std::map<Track, std::string> thread_names;
  size_t index = 0;
  for (const json& e : trace["traceEvents"]) {
    const std::string where = fmt::format("event {}", index++);
    if (!e.is_object() || !e.contains("ph") || !e["ph"].is_string()) {
      check.problems.push_back(where + " has no string \"ph\"");
      continue;
    }
    if (!e.contains("pid") || !e["pid"].is_number_integer() || !e.contains("tid") || !e["tid"].is_number_integer()) {
      check.problems.push_back(where + " has no integer \"pid\" and \"tid\"");
      continue;
    }
    const Track track{e["pid"].get<int64_t>(), e["tid"].get<int64_t>()};
    if (e["ph"] == "M" && e.contains("name") && e["name"].is_string()) {
      if (const auto name = metadata_name(e)) {
        if (e["name"] == "process_name") process_names[track.first] = *name;
        if (e["name"] == "thread_name") thread_names[track] = *name;
      }
      continue;
    }
    if (e["ph"] != "X") continue;
    const bool named = e.contains("name") && e["name"].is_string();
    if (!named) check.problems.push_back(where + " (\"X\") has no string \"name\"");
    if (!e.contains("ts") || !e["ts"].is_number() || !e.contains("dur") || !e["dur"].is_number() ||
        e["dur"].get<double>() < 0) {
      check.problems.push_back(where + " (\"X\") needs numeric \"ts\" and \"dur\" >= 0");
      continue;
    }
    const double ts = e["ts"].get<double>();
    by_track[track].push_back(
        Slice{ts, ts + e["dur"].get<double>(), named ? e["name"].get<std::string>() : std::string("?")});
  }

  const auto track_name = [&](const Track& track) {
    const auto process = process_names.find(track.first);
    const auto thread = thread_names.find(track);
    if (process == process_names.end() && thread == thread_names.end())
      return fmt::format("pid {}, tid {}", track.first, track.second);
    return fmt::format("{} / {} (pid {}, tid {})", process == process_names.end() ? "?" : process->second,
                       thread == thread_names.end() ? "?" : thread->second, track.first, track.second);
  };
  std::set<int64_t> pids;
  for (auto& [track, slices] : by_track) {
    const std::string where = track_name(track);
    pids.insert(track.first);
    check.slices += slices.size();
    // Monotonic: the file lists a track's slices in time order.
    for (size_t i = 1; i < slices.size(); ++i) {
      if (slices[i].start + kSlackUs < slices[i - 1].start) {
        check.problems.push_back(fmt::format("{}: \"{}\" (starts {:.3f} us) is listed after \"{}\" (starts {:.3f} us): "
                                             "slices of one track must appear in time order",
                                             where, slices[i].name, slices[i].start, slices[i - 1].name,
                                             slices[i - 1].start));
        break;  // one out-of-order pair says it; the rest of the track is checked in time order below
      }
    }
    std::stable_sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
      return a.start != b.start ? a.start < b.start : a.end > b.end;
    });
    // Well nested: each slice ends inside the innermost slice it starts in.
    std::vector<const Slice*> open;
    for (const Slice& slice : slices) {
      while (!open.empty() && open.back()->end <= slice.start + kSlackUs) open.pop_back();
      if (!open.empty() && slice.end > open.back()->end + kSlackUs) {
        check.problems.push_back(fmt::format("{}: \"{}\" ({:.3f}-{:.3f} us) overlaps \"{}\" ({:.3f}-{:.3f} us) "
                                             "without nesting inside it",
                                             where, slice.name, slice.start, slice.end, open.back()->name,
                                             open.back()->start, open.back()->end));
      }
      open.push_back(&slice);
    }
    // Steps in order: "Batch N" slices of one track follow each other in increasing N. Slices that start at the
    // same time (a zero-length step and the next) may be listed either way.
    std::vector<std::pair<int64_t, const Slice*>> batches;
    for (const Slice& slice : slices)
      if (const std::optional<int64_t> number = batch_number(slice.name)) batches.push_back({*number, &slice});
    std::stable_sort(batches.begin(), batches.end(), [](const auto& a, const auto& b) {
      return a.second->start != b.second->start ? a.second->start < b.second->start : a.first < b.first;
    });
    for (size_t i = 1; i < batches.size(); ++i) {
      const Slice& previous = *batches[i - 1].second;
      const Slice& slice = *batches[i].second;
      if (batches[i].first <= batches[i - 1].first)
        check.problems.push_back(fmt::format("{}: \"{}\" (starts {:.3f} us) comes after \"{}\" (starts {:.3f} us): "
                                             "steps must follow each other in increasing order",
                                             where, slice.name, slice.start, previous.name, previous.start));
    }
  }
  check.tracks = by_track.size();
  check.processes = pids.size();
  return check;
}

std::vector<std::string> check_trace(const json& trace) { return check_trace_events(trace).problems; }

TraceCheck check_trace_file(const std::string& path) {
  std::string text;
  try {
    text = read_small_file(path, kMaxTraceBytes, "trace");
  } catch (const Error& e) {
    fail("cannot read trace '{}' (--check-trace): check the path: {}", path, e.what());
  }
  json trace;
  try {
    trace = parse_json(text, "trace '" + path + "'");
  } catch (const json::exception& e) {
    fail("trace '{}' (--check-trace) is not valid JSON: {}", path, e.what());
  }
  return check_trace_events(trace);
}

}  // namespace ddpx
