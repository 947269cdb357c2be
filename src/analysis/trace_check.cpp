// The trace checker (see trace_check.hpp).
#include "analysis/trace_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <compare>
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
constexpr size_t kMaxListedProblems = 10000;  // a trace of a million bad events lists these, then a count

// A pid or a tid. The Trace Event Format allows integers and strings (PyTorch's profiler writes strings such as
// "Spans"); an integer and a string never name the same track, and integers print as they always did.
struct TrackId {
  std::optional<int64_t> number;  // when an integer
  std::string text;               // when a string
  auto operator<=>(const TrackId&) const = default;
};

std::string format_id(const TrackId& id) {
  return id.number ? fmt::format("{}", *id.number) : fmt::format("\"{}\"", id.text);
}

using Track = std::pair<TrackId, TrackId>;  // pid, tid

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

// The fields of one event that the checks read, taken from a parsed event or from the streaming reader.
struct EventFields {
  bool is_object = false;
  std::optional<std::string> ph;             // when a string
  std::optional<TrackId> pid, tid;           // when integers or strings
  bool has_name = false;
  std::optional<std::string> name;           // when a string
  std::optional<double> ts, dur;             // when numbers
  std::optional<std::string> metadata_name;  // args.name, when a string
};

EventFields fields_of(const json& e) {
  EventFields f;
  f.is_object = e.is_object();
  if (!f.is_object) return f;
  if (e.contains("ph") && e["ph"].is_string()) f.ph = e["ph"].get<std::string>();
  const auto id_of = [&](const char* key) -> std::optional<TrackId> {
    if (!e.contains(key)) return std::nullopt;
    if (e[key].is_number_integer()) return TrackId{e[key].get<int64_t>(), {}};
    if (e[key].is_string()) return TrackId{std::nullopt, e[key].get<std::string>()};
    return std::nullopt;
  };
  f.pid = id_of("pid");
  f.tid = id_of("tid");
  f.has_name = e.contains("name");
  if (f.has_name && e["name"].is_string()) f.name = e["name"].get<std::string>();
  if (e.contains("ts") && e["ts"].is_number()) f.ts = e["ts"].get<double>();
  if (e.contains("dur") && e["dur"].is_number()) f.dur = e["dur"].get<double>();
  f.metadata_name = metadata_name(e);
  return f;
}

// Takes the events one at a time (in file order) and checks the tracks at the end.
class TraceChecker {
 public:
  void add(const EventFields& e) {
    const std::string where = fmt::format("event {}", index_++);
    if (!e.is_object || !e.ph) {
      problem(where + " has no string \"ph\"");
      return;
    }
    if (!e.pid || !e.tid) {
      problem(where + " has no integer or string \"pid\" and \"tid\"");
      return;
    }
    const Track track{*e.pid, *e.tid};
    if (*e.ph == "M" && e.name) {
      if (e.metadata_name) {
        if (*e.name == "process_name") process_names_[track.first] = *e.metadata_name;
        if (*e.name == "thread_name") thread_names_[track] = *e.metadata_name;
      }
      return;
    }
    if (*e.ph != "X") return;
    if (!e.name) problem(where + " (\"X\") has no string \"name\"");
    if (!e.ts || !e.dur || *e.dur < 0) {
      problem(where + " (\"X\") needs numeric \"ts\" and \"dur\" >= 0");
      return;
    }
    by_track_[track].push_back(Slice{*e.ts, *e.ts + *e.dur, e.name ? *e.name : std::string("?")});
  }

  void fail_structure() {
    problem("the trace is neither an object with a \"traceEvents\" array nor an array of events");
  }

  TraceCheck finish() {
    check_tracks();
    if (unlisted_ > 0) check_.problems.push_back(fmt::format("... and {} more problems", unlisted_));
    return std::move(check_);
  }

 private:
  void problem(std::string text) {
    if (check_.problems.size() < kMaxListedProblems) {
      check_.problems.push_back(std::move(text));
    } else {
      ++unlisted_;
    }
  }

  std::string track_name(const Track& track) const {
    const auto process = process_names_.find(track.first);
    const auto thread = thread_names_.find(track);
    if (process == process_names_.end() && thread == thread_names_.end())
      return fmt::format("pid {}, tid {}", format_id(track.first), format_id(track.second));
    return fmt::format("{} / {} (pid {}, tid {})", process == process_names_.end() ? "?" : process->second,
                       thread == thread_names_.end() ? "?" : thread->second, format_id(track.first),
                       format_id(track.second));
  }

  void check_tracks() {
    std::set<TrackId> pids;
    for (auto& [track, slices] : by_track_) {
      const std::string where = track_name(track);
      pids.insert(track.first);
      check_.slices += slices.size();
      // Monotonic: the file lists a track's slices in time order.
      for (size_t i = 1; i < slices.size(); ++i) {
        if (slices[i].start + kSlackUs < slices[i - 1].start) {
          problem(fmt::format("{}: \"{}\" (starts {:.3f} us) is listed after \"{}\" (starts {:.3f} us): slices of one "
                              "track must appear in time order",
                              where, slices[i].name, slices[i].start, slices[i - 1].name, slices[i - 1].start));
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
          problem(fmt::format("{}: \"{}\" ({:.3f}-{:.3f} us) overlaps \"{}\" ({:.3f}-{:.3f} us) without nesting "
                              "inside it",
                              where, slice.name, slice.start, slice.end, open.back()->name, open.back()->start,
                              open.back()->end));
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
          problem(fmt::format("{}: \"{}\" (starts {:.3f} us) comes after \"{}\" (starts {:.3f} us): steps must follow "
                              "each other in increasing order",
                              where, slice.name, slice.start, previous.name, previous.start));
      }
    }
    check_.tracks = by_track_.size();
    check_.processes = pids.size();
  }

  TraceCheck check_;
  size_t index_ = 0;
  size_t unlisted_ = 0;
  std::map<Track, std::vector<Slice>> by_track_;  // in file order
  std::map<TrackId, std::string> process_names_;
  std::map<Track, std::string> thread_names_;
};

// Note [Streaming trace check]: `report --check-trace` on a trace of 1M events ran past 60 s, nearly all of it in
// building the whole document (nlohmann's DOM, with a parser callback). The file reader now streams: a SAX handler
// keeps only the fields the checks read, one event at a time, so time and memory grow with the events' slices,
// not with the document. Depth is bounded as parse_json() bounds it. The events sit one level below their array:
// depth 3 in the object form ({"traceEvents": [...]}), depth 2 in the array form ([...]), which the format allows.
class TraceSax : public nlohmann::json_sax<json> {
 public:
  explicit TraceSax(TraceChecker& checker) : checker_(checker) {}

  bool null() override { return scalar(Value{}); }
  bool boolean(bool) override { return scalar(Value{}); }
  bool number_integer(number_integer_t value) override { return scalar(Value{Kind::integer, value, 0, {}}); }
  bool number_unsigned(number_unsigned_t value) override {
    return scalar(Value{Kind::integer, static_cast<int64_t>(value), 0, {}});
  }
  bool number_float(number_float_t value, const string_t&) override {
    return scalar(Value{Kind::floating, 0, value, {}});
  }
  bool string(string_t& value) override { return scalar(Value{Kind::text, 0, 0, std::move(value)}); }
  bool binary(binary_t&) override { return scalar(Value{}); }

  bool start_object(std::size_t) override {
    if (depth_ == event_depth() && in_event_array()) scalar(Value{});  // a container as a field's value: not its type
    if (!enter()) return false;
    if (depth_ == 1) top_is_object_ = true;
    if (in_event_array() && depth_ == event_depth()) {
      event_ = EventFields{};
      event_.is_object = true;
    }
    if (depth_ == event_depth() + 1 && event_open() && key_ == "args") in_args_ = true;
    return true;
  }
  bool end_object() override {
    if (depth_ == event_depth() && in_event_array()) checker_.add(event_);
    if (depth_ == event_depth() + 1) in_args_ = false;
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    if (depth_ == event_depth() && in_event_array()) scalar(Value{});
    if (!enter()) return false;
    if (depth_ == 1 || (depth_ == 2 && top_is_object_ && key_ == "traceEvents")) {
      events_array_ = true;
      saw_events_ = true;
      events_depth_ = depth_;
    } else if (depth_ == event_depth() && in_event_array()) {
      checker_.add(EventFields{});  // an array is not an event
    }
    return true;
  }
  bool end_array() override {
    if (depth_ == events_depth_) events_array_ = false;
    --depth_;
    return true;
  }
  bool key(string_t& value) override {
    if (depth_ == 1 || (depth_ == event_depth() && in_event_array()) || (depth_ == event_depth() + 1 && in_args_))
      key_ = value;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& error) override {
    error_ = fmt::format("{} (at byte {})", error.what(), position);
    return false;
  }

  bool saw_events() const { return saw_events_; }
  const std::string& error() const { return error_; }

 private:
  enum class Kind { other, integer, floating, text };
  struct Value {
    Kind kind = Kind::other;
    int64_t integer = 0;
    double floating = 0;
    std::string text;
  };

  bool enter() {
    if (++depth_ > kMaxJsonDepth) {
      error_ = fmt::format("it nests JSON deeper than {} levels, which no trace does", kMaxJsonDepth);
      return false;
    }
    return true;
  }
  bool in_event_array() const { return events_array_; }
  int event_depth() const { return events_depth_ + 1; }
  bool event_open() const { return in_event_array() && depth_ >= event_depth(); }

  bool scalar(Value value) {
    if (depth_ == events_depth_ && in_event_array()) {
      checker_.add(EventFields{});  // a scalar is not an event
    } else if (depth_ == event_depth() && in_event_array()) {
      const bool number = value.kind == Kind::integer || value.kind == Kind::floating;
      const double as_double = value.kind == Kind::integer ? static_cast<double>(value.integer) : value.floating;
      if (key_ == "ph") event_.ph = value.kind == Kind::text ? std::optional<std::string>(value.text) : std::nullopt;
      std::optional<TrackId> id;
      if (value.kind == Kind::integer) id = TrackId{value.integer, {}};
      if (value.kind == Kind::text) id = TrackId{std::nullopt, value.text};
      if (key_ == "pid") event_.pid = id;
      if (key_ == "tid") event_.tid = id;
      if (key_ == "name") {
        event_.has_name = true;
        event_.name = value.kind == Kind::text ? std::optional<std::string>(value.text) : std::nullopt;
      }
      if (key_ == "ts") event_.ts = number ? std::optional<double>(as_double) : std::nullopt;
      if (key_ == "dur") event_.dur = number ? std::optional<double>(as_double) : std::nullopt;
      if (key_ == "args") event_.metadata_name.reset();
    } else if (depth_ == event_depth() + 1 && in_args_ && key_ == "name") {
      event_.metadata_name = value.kind == Kind::text ? std::optional<std::string>(value.text) : std::nullopt;
    }
    return true;
  }

  TraceChecker& checker_;
  int depth_ = 0;
  bool top_is_object_ = false;
  bool events_array_ = false;
  int events_depth_ = 2;  // the events array's depth: 2 in the object form, 1 in the array form
  bool saw_events_ = false;
  bool in_args_ = false;
  std::string key_;
  EventFields event_;
  std::string error_;
};

}  // namespace

TraceCheck check_trace_events(const json& trace) {
  TraceChecker checker;
  const bool object_form = trace.is_object() && trace.contains("traceEvents") && trace["traceEvents"].is_array();
  if (!object_form && !trace.is_array()) {
    checker.fail_structure();
    return checker.finish();
  }
  for (const json& e : object_form ? trace["traceEvents"] : trace) checker.add(fields_of(e));
  return checker.finish();
}

std::vector<std::string> check_trace(const json& trace) { return check_trace_events(trace).problems; }

TraceCheck check_trace_file(const std::string& path) {
  std::string text;
  try {
    text = read_small_file(path, kMaxTraceBytes, "trace");
  } catch (const Error& e) {
    fail("cannot read trace '{}' (--check-trace): check the path: {}", path, e.what());
  }
  TraceChecker checker;
  TraceSax sax(checker);
  if (!json::sax_parse(text, &sax)) fail("trace '{}' (--check-trace) is not valid JSON: {}", path, sax.error());
  if (!sax.saw_events()) checker.fail_structure();
  return checker.finish();
}

}  // namespace ddpx
