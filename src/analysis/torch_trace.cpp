// PyTorch profiler traces -> run reports; see torch_trace.hpp.
#include "analysis/torch_trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "core/json_parse.hpp"
#include "io/posix_file.hpp"
#include "io/same_file.hpp"
#include "report/time_intervals.hpp"

namespace ddpx {
namespace {

constexpr uint64_t kMaxTraceBytes = uint64_t{2} << 30;
constexpr const char* kHowToRecord =
    "record with torch.profiler.profile(schedule=torch.profiler.schedule(wait=1, warmup=1, active=3), "
    "on_trace_ready=lambda p: p.export_chrome_trace(f'trace_rank{rank}.json')), calling prof.step() after every "
    "optimizer step, around a loop that calls the DistributedDataParallel module";

struct Event {
  std::string name;
  std::string category;
  std::string thread;  // tid as text (ints in some traces, strings in others)
  double begin_ms = 0, end_ms = 0;
  int64_t bytes = 0;
  TimeInterval interval() const { return {begin_ms, end_ms}; }
};

bool starts_with(const std::string& text, std::string_view prefix) { return text.rfind(prefix, 0) == 0; }

int64_t dtype_bytes(const std::string& dtype) {
  if (dtype == "Float" || dtype == "Int") return 4;
  if (dtype == "Half" || dtype == "BFloat16") return 2;
  if (dtype == "Double" || dtype == "Long") return 8;
  return dtype == "Byte" || dtype == "Char" || dtype == "Bool" ? 1 : 0;
}

std::vector<Event> complete_events(const nlohmann::json& list, const std::string& what) {
  std::vector<Event> events;
  for (const nlohmann::json& e : list) {
    if (!e.is_object() || e.value("ph", "") != "X") continue;
    const auto name = e.find("name"), ts = e.find("ts"), dur = e.find("dur");
    if (name == e.end() || !name->is_string() || ts == e.end() || !ts->is_number() || dur == e.end() ||
        !dur->is_number())
      fail("{}: a complete event without a name, ts or dur: {}", what, json_excerpt(e));
    const double begin = ts->get<double>() / 1000, length = dur->get<double>() / 1000;
    DDPX_REQUIRE(std::isfinite(begin) && std::isfinite(length) && length >= 0 && std::fabs(begin) < 1e15,
                 "{}: event '{}' has ts {} and dur {}, which are no times in µs", what, name->get<std::string>(),
                 json_excerpt(*ts), json_excerpt(*dur));
    Event event{name->get<std::string>(), e.value("cat", ""), "", begin, begin + length, 0};
    if (const auto tid = e.find("tid"); tid != e.end()) event.thread = tid->is_string() ? tid->get<std::string>()
                                                                                         : tid->dump();
    if (const auto args = e.find("args"); args != e.end() && args->is_object()) {
      const auto nelems = args->find("In msg nelems"), dtype = args->find("dtype");
      if (nelems != args->end() && nelems->is_number_integer() && dtype != args->end() && dtype->is_string())
        event.bytes = nelems->get<int64_t>() * dtype_bytes(dtype->get<std::string>());
    }
    events.push_back(std::move(event));
  }
  return events;
}

bool is_collective(const Event& e) {
  return starts_with(e.name, "gloo:") || starts_with(e.name, "nccl:") ||
         (e.category == "kernel" && starts_with(e.name, "nccl"));
}

std::string collective_of(const std::string& name) {
  for (const char* op : {"all_reduce", "allreduce", "broadcast", "all_gather", "allgather", "reduce_scatter"})
    if (name.find(op) != std::string::npos) {
      const std::string found = op;
      if (found == "allreduce") return "all_reduce";
      if (found == "allgather") return "all_gather";
      return found;
    }
  return "all_reduce";
}

bool inside(const Event& e, const Event& step) { return e.begin_ms >= step.begin_ms && e.begin_ms < step.end_ms; }

// `by_begin`: the trace's events sorted by begin_ms, so a step's events are one range found by binary search (a
// scan of every event per step made a long trace quadratic: 400k events took 56 s, 2.1M did not finish in 60 s).
StepRecord step_record(const std::vector<Event>& by_begin, const Event& step, int64_t number, double origin_ms,
                       const std::string& what) {
  std::optional<double> forward_begin;
  std::vector<TimeInterval> backward, c10d, optimizer, data, comm;
  std::vector<const Event*> collectives;
  double first_backward = step.end_ms;
  const auto first = std::lower_bound(by_begin.begin(), by_begin.end(), step.begin_ms,
                                      [](const Event& e, double ms) { return e.begin_ms < ms; });
  const auto last = std::lower_bound(first, by_begin.end(), step.end_ms,
                                     [](const Event& e, double ms) { return e.begin_ms < ms; });
  for (auto it = first; it != last; ++it) {
    const Event& e = *it;
    DDPX_INTERNAL_ASSERT(inside(e, step), "torch trace: an event outside its step's range");
    if (e.name == "DistributedDataParallel.forward") {
      if (!forward_begin || e.begin_ms < *forward_begin) forward_begin = e.begin_ms;
    } else if (starts_with(e.name, "autograd::engine::evaluate_function:")) {
      backward.push_back(e.interval());
      first_backward = std::min(first_backward, e.begin_ms);
    } else if (starts_with(e.name, "c10d::")) {
      c10d.push_back(e.interval());
    } else if (starts_with(e.name, "Optimizer.step#") || starts_with(e.name, "Optimizer.zero_grad#")) {
      optimizer.push_back(e.interval());
    } else if (starts_with(e.name, "enumerate(DataLoader)#")) {
      data.push_back(e.interval());
    } else if (is_collective(e)) {
      comm.push_back(e.interval());
      collectives.push_back(&e);
    }
  }
  DDPX_REQUIRE(forward_begin.has_value(), "{}: step {} holds no DistributedDataParallel.forward range: profile the "
               "loop that calls the DDP-wrapped module; {}", what, number, kHowToRecord);
  DDPX_REQUIRE(!backward.empty(), "{}: step {} holds no backward pass (autograd::engine::evaluate_function "
               "ranges): call loss.backward() inside the profiled step; {}", what, number, kHowToRecord);
  StepRecord record;
  record.step = number;
  record.start_ms = step.begin_ms - origin_ms;
  PhaseTimes& p = record.phases;
  p.total_ms = step.end_ms - step.begin_ms;
  p.forward_ms = std::max(0.0, first_backward - *forward_begin);
  p.backward_ms = uncovered_ms(backward, c10d);
  p.optimizer_ms = union_ms(optimizer);
  p.data_wait_ms = union_ms(data);
  std::vector<TimeInterval> compute = backward;
  compute.push_back({*forward_begin, first_backward});
  compute.insert(compute.end(), optimizer.begin(), optimizer.end());
  // Compute is what runs outside the collectives' calls: the c10d sub-ranges of the backward are waits. Both unions
  // are sorted and disjoint, so one sweep subtracts them (linear, where a piece-by-interval loop was quadratic).
  std::vector<TimeInterval> compute_only;
  const std::vector<TimeInterval> waits = union_of(c10d);
  size_t w = 0;
  for (const TimeInterval& t : union_of(compute)) {
    while (w < waits.size() && waits[w].end_ms <= t.begin_ms) ++w;
    double from = t.begin_ms;
    for (size_t k = w; k < waits.size() && waits[k].begin_ms < t.end_ms; ++k) {
      if (waits[k].begin_ms > from) compute_only.push_back({from, waits[k].begin_ms});
      from = std::max(from, waits[k].end_ms);
    }
    if (from < t.end_ms) compute_only.push_back({from, t.end_ms});
  }
  p.exposed_comm_ms = uncovered_ms(comm, compute_only);
  std::sort(collectives.begin(), collectives.end(),
            [](const Event* a, const Event* b) { return a->begin_ms < b->begin_ms; });
  for (size_t i = 0; i < collectives.size(); ++i) {
    const Event& e = *collectives[i];
    record.buckets.push_back(BucketRecord{.index = static_cast<int>(i),
                                          .bytes = e.bytes,
                                          .elements = e.bytes / 4,
                                          .hook = "allreduce",
                                          .collective = collective_of(e.name),
                                          .launch_ms = e.begin_ms - step.begin_ms,
                                          .start_ms = e.begin_ms - step.begin_ms,
                                          .end_ms = e.end_ms - step.begin_ms,
                                          .stream = e.category == "kernel" ? "nccl" : e.thread});
  }
  p.comm_ms = comm_window_ms(record.buckets);
  return record;
}

}  // namespace

RankRun rank_run_from_torch_trace(const nlohmann::json& trace, const std::string& what, int file_index) {
  const nlohmann::json* list = &trace;
  RankRun run;
  run.info.rank = file_index;
  run.info.device_name = "cpu";
  run.info.precision = "fp32";
  if (trace.is_object()) {
    const auto events = trace.find("traceEvents");
    DDPX_REQUIRE(events != trace.end() && events->is_array(),
                 "{} is not a PyTorch profiler trace: a JSON object without traceEvents (a ddpx run report goes to "
                 "`ddpx report FILE`; {})", what, kHowToRecord);
    list = &*events;
    if (const auto info = trace.find("distributedInfo"); info != trace.end() && info->is_object()) {
      if (info->contains("rank") && (*info)["rank"].is_number_integer()) run.info.rank = (*info)["rank"].get<int>();
      if (info->contains("world_size") && (*info)["world_size"].is_number_integer())
        run.info.world_size = (*info)["world_size"].get<int>();
    }
    if (const auto devices = trace.find("deviceProperties"); devices != trace.end() && devices->is_array() &&
                                                              !devices->empty() && (*devices)[0].contains("name"))
      run.info.device_name = (*devices)[0]["name"].is_string() ? (*devices)[0]["name"].get<std::string>() : "cuda";
  } else {
    DDPX_REQUIRE(trace.is_array(), "{} is not a PyTorch profiler trace (Kineto's object with traceEvents, or the "
                 "legacy profiler's list of events); {}", what, kHowToRecord);
  }
  std::vector<Event> events = complete_events(*list, what);
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.begin_ms < b.begin_ms; });
  std::vector<const Event*> steps;
  for (const Event& e : events)
    if (starts_with(e.name, "ProfilerStep#")) steps.push_back(&e);
  DDPX_REQUIRE(!steps.empty(), "{}: no ProfilerStep#N ranges ({} complete events): {}", what, events.size(),
               kHowToRecord);
  std::sort(steps.begin(), steps.end(), [](const Event* a, const Event* b) { return a->begin_ms < b->begin_ms; });
  for (const Event* step : steps) {
    int64_t number = 0;
    try {
      number = std::stoll(step->name.substr(std::string("ProfilerStep#").size()));
    } catch (const std::exception&) {
      fail("{}: '{}' is not ProfilerStep#<number>", what, step->name);
    }
    run.steps.push_back(step_record(events, *step, number, steps.front()->begin_ms, what));
  }
  return run;
}

RunReport read_torch_profiles(const std::vector<std::string>& paths, const TorchProfileOptions& options) {
  DDPX_REQUIRE(!paths.empty(), "--torch-profile: give one trace per rank (trace_rank0.json trace_rank1.json ...)");
  // One trace given twice would be analysed as two ranks (issue 48: `--torch-profile t.json t.json`).
  for (size_t i = 0; i < paths.size(); ++i)
    for (size_t j = 0; j < i; ++j) {
      const std::optional<FileIdentity> a = file_identity(paths[j]), b = file_identity(paths[i]);
      DDPX_REQUIRE(!a || !b || *a != *b,
                   "--torch-profile '{}' and '{}' are the same file: one trace would be read as two ranks; give one "
                   "trace per rank", paths[j], paths[i]);
    }
  RunReport report;
  std::vector<RankRun> runs;
  for (size_t i = 0; i < paths.size(); ++i) {
    const std::string what = fmt::format("--torch-profile '{}'", paths[i]);
    std::string text;
    try {
      text = read_small_file(paths[i], kMaxTraceBytes, "PyTorch profiler trace");
    } catch (const Error& e) {
      fail("cannot read {}: {}", what, e.what());
    }
    nlohmann::json trace;
    try {
      trace = parse_json(text, what);
    } catch (const nlohmann::json::exception& e) {
      fail("{} is not JSON: {}", what, e.what());
    }
    runs.push_back(rank_run_from_torch_trace(trace, what, static_cast<int>(i)));
    DDPX_REQUIRE(runs.back().info.world_size == 1 || runs.back().info.world_size == static_cast<int>(paths.size()),
                 "{} comes from a job of {} ranks, but {} trace(s) were given: give one trace per rank",
                 what, runs.back().info.world_size, paths.size());
  }
  std::sort(runs.begin(), runs.end(), [](const RankRun& a, const RankRun& b) { return a.info.rank < b.info.rank; });
  for (size_t r = 0; r < runs.size(); ++r) {
    DDPX_REQUIRE(runs[r].info.rank == static_cast<int>(r), "--torch-profile: the traces' ranks are not 0..{} (a "
                 "rank is missing or given twice; rank {} found where {} was expected)", runs.size() - 1,
                 runs[r].info.rank, r);
    runs[r].info.world_size = static_cast<int>(runs.size());
    auto numbers = [](const RankRun& run) {
      std::vector<int64_t> n;
      for (const StepRecord& s : run.steps) n.push_back(s.step);
      return n;
    };
    DDPX_REQUIRE(numbers(runs[r]) == numbers(runs[0]),
                 "--torch-profile: the ranks' traces hold different steps: rank 0 has ProfilerStep#{}..{} ({} "
                 "steps), rank {} has #{}..{} ({} steps); record every rank with the same schedule in the same run",
                 runs[0].steps.front().step, runs[0].steps.back().step, runs[0].steps.size(), r,
                 runs[r].steps.front().step, runs[r].steps.back().step, runs[r].steps.size());
  }
  report.config.model = options.model;
  report.config.batch = options.batch;
  report.config.precision = "fp32";
  report.config.hook = "allreduce";
  report.config.world = static_cast<int>(runs.size());
  report.config.ddp = true;
  report.config.workers = 0;
  report.ranks = std::move(runs);
  return report;
}

double median_step_less_exposed_ms(const RankRun& run) {
  std::vector<double> values;
  for (const StepRecord& s : run.steps) values.push_back(s.phases.total_ms - s.phases.exposed_comm_ms);
  std::sort(values.begin(), values.end());
  return values.empty() ? 0.0 : values[values.size() / 2];
}

int fastest_rank(const RunReport& report) {
  int best = 0;
  for (size_t r = 1; r < report.ranks.size(); ++r)
    if (median_step_less_exposed_ms(report.ranks[r]) <
        median_step_less_exposed_ms(report.ranks[static_cast<size_t>(best)]))
      best = static_cast<int>(r);
  return best;
}

int waited_for_rank(const RunReport& report) {
  int worst = 0;
  for (size_t r = 1; r < report.ranks.size(); ++r)
    if (median_step_less_exposed_ms(report.ranks[r]) >
        median_step_less_exposed_ms(report.ranks[static_cast<size_t>(worst)]))
      worst = static_cast<int>(r);
  return worst;
}

RunReport one_rank_report(const RunReport& report, int rank, int64_t gradient_elements) {
  DDPX_REQUIRE(rank >= 0 && rank < static_cast<int>(report.ranks.size()), "no rank {} among the {} traces", rank,
               report.ranks.size());
  DDPX_REQUIRE(gradient_elements > 0, "--torch-gradients: give the model's gradient elements (sum(p.numel() for p in "
               "model.parameters() if p.requires_grad)); the traces do not hold them and ddpx predict needs them");
  RunReport one;
  one.config = report.config;
  one.config.world = 1;
  one.config.gradient_tensors = {GradientTensorInfo{"all_parameters", {gradient_elements}, 0, gradient_elements}};
  RankRun run = report.ranks[static_cast<size_t>(rank)];
  run.info.rank = 0;
  run.info.world_size = 1;
  for (StepRecord& step : run.steps) {
    step.phases.total_ms -= step.phases.exposed_comm_ms;
    step.phases.exposed_comm_ms = 0;
    step.phases.comm_ms = 0;
    step.buckets.clear();
  }
  one.ranks = {std::move(run)};
  return one;
}

}  // namespace ddpx
