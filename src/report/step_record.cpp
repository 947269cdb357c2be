// JSON conversion and comm-phase helpers for the step records (see step_record.hpp).
#include "report/step_record.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include <fstream>
#include <regex>
#include <tuple>
#include <utility>

#include "core/error.hpp"
#include "core/json_parse.hpp"
#include "io/output_file.hpp"
#include "report/json_fields.hpp"

namespace ddpx {
namespace {
constexpr uint64_t kMaxReportBytes = uint64_t{4} << 30;  // reports of very long runs reach hundreds of MB
constexpr size_t kMaxReportRanks = 16384;  // the analysis keeps per-rank tables; far beyond any run ddpx records
}  // namespace

using nlohmann::json;
namespace jf = json_fields;

namespace {

// Times in a report are milliseconds from the run's start. Beyond 10^12 ms (31 years) they are not a run's, and in
// nanoseconds (the trace) they would not fit an int64, so the trace would silently show other times.
constexpr double kMaxReportMs = 1e12;

void require_time(const char* record, const char* field, double ms, double min_ms) {
  DDPX_REQUIRE(std::isfinite(ms) && ms >= min_ms && ms <= kMaxReportMs,
               "{}: field '{}' must be a time in [{:g}, {:g}] ms, got {}", record, field, min_ms, kMaxReportMs, ms);
}

using jf::field;
using jf::Read;
using jf::Write;

// Each record's fields, once: its from_json reads them in this order, its to_json writes them.
constexpr auto kPhaseFields = std::tuple{
    field("data_wait_ms", &PhaseTimes::data_wait_ms, Read::optional),
    field("h2d_copy_ms", &PhaseTimes::h2d_copy_ms, Read::optional),
    field("forward_ms", &PhaseTimes::forward_ms),
    field("backward_ms", &PhaseTimes::backward_ms),
    field("comm_ms", &PhaseTimes::comm_ms, Read::optional),
    field("exposed_comm_ms", &PhaseTimes::exposed_comm_ms, Read::optional),
    field("optimizer_ms", &PhaseTimes::optimizer_ms, Read::optional),
    field("total_ms", &PhaseTimes::total_ms)};

constexpr auto kBucketFields = std::tuple{
    field("index", &BucketRecord::index),
    field("bytes", &BucketRecord::bytes),
    field("elements", &BucketRecord::elements, Read::optional),
    field("hook", &BucketRecord::hook, Read::optional),
    field("collective", &BucketRecord::collective, Read::optional),
    field("launch_ms", &BucketRecord::launch_ms),
    field("start_ms", &BucketRecord::start_ms),
    field("end_ms", &BucketRecord::end_ms),
    field("stream", &BucketRecord::stream, Read::optional)};

constexpr auto kRankInfoFields = std::tuple{
    field("rank", &RankInfo::rank),
    field("device_name", &RankInfo::device_name, Read::optional),
    field("precision", &RankInfo::precision, Read::optional),
    field("world_size", &RankInfo::world_size),
    field("transport", &RankInfo::transport, Read::optional),
    field("host", &RankInfo::host, Read::optional, Write::unless_default)};

constexpr auto kLossFields = std::tuple{field("step", &LossPoint::step), field("loss", &LossPoint::loss)};

constexpr auto kEvalFields = std::tuple{
    field("step", &EvalPoint::step),
    field("loss", &EvalPoint::loss),
    field("top1", &EvalPoint::top1),
    field("top5", &EvalPoint::top5),
    field("count", &EvalPoint::count),
    field("weights", &EvalPoint::weights, Read::optional)};

constexpr auto kThroughputFields = std::tuple{field("steps_per_s", &RunThroughput::steps_per_s),
                                              field("images_per_s", &RunThroughput::images_per_s)};

constexpr auto kCalibrationFields = std::tuple{field("step", &CalibrationRecord::step),
                                               field("plain", &CalibrationRecord::plain),
                                               field("reduce_ms", &CalibrationRecord::reduce_ms)};

constexpr auto kDdpCostFields = std::tuple{
    field("calibration_steps", &DdpCost::calibration_steps),
    field("measured_step_ms", &DdpCost::measured_step_ms),
    field("plain_step_ms", &DdpCost::plain_step_ms),
    field("cost_ms", &DdpCost::cost_ms),
    field("exposed_comm_ms", &DdpCost::exposed_comm_ms),
    field("hook_work_ms", &DdpCost::hook_work_ms),
    field("hook_work_sampled", &DdpCost::hook_work_sampled, Read::optional),
    field("other_ms", &DdpCost::other_ms)};

constexpr auto kGradientTensorFields = std::tuple{
    field("name", &GradientTensorInfo::name), field("shape", &GradientTensorInfo::shape),
    field("offset", &GradientTensorInfo::offset), field("numel", &GradientTensorInfo::numel)};

// seed, steps and warmup are written together when steps > 0, the optimizer when it has a name (to_json below).
constexpr auto kRunConfigFields = std::tuple{
    field("model", &RunConfig::model, Read::optional),
    field("batch", &RunConfig::batch),
    field("precision", &RunConfig::precision),
    field("weight_grads", &RunConfig::weight_grads, Read::optional, Write::unless_default),
    field("hook", &RunConfig::hook, Read::optional),
    field("bucket_mb", &RunConfig::bucket_mb, Read::optional),
    field("first_bucket_mb", &RunConfig::first_bucket_mb, Read::optional),
    field("overlap", &RunConfig::overlap, Read::optional),
    field("grad_accum", &RunConfig::grad_accum, Read::optional),
    field("world", &RunConfig::world),
    field("ddp", &RunConfig::ddp, Read::optional),
    field("workers", &RunConfig::workers, Read::optional),
    field("backend", &RunConfig::backend, Read::optional, Write::unless_default),
    field("seed", &RunConfig::seed, Read::optional, Write::by_hand),
    field("steps", &RunConfig::steps, Read::optional, Write::by_hand),
    field("warmup", &RunConfig::warmup, Read::optional, Write::by_hand),
    field("data", &RunConfig::data, Read::optional, Write::unless_default),
    field("ddpx_version", &RunConfig::ddpx_version, Read::optional, Write::unless_default),
    field("ddpx_commit", &RunConfig::ddpx_commit, Read::optional, Write::unless_default),
    field("started_utc", &RunConfig::started_utc, Read::optional, Write::unless_default),
    field("command_line", &RunConfig::command_line, Read::optional, Write::unless_default),
    field("optimizer", &RunConfig::optimizer, Read::optional, Write::by_hand),
    field("gradient_tensors", &RunConfig::gradient_tensors, Read::optional, Write::unless_default),
    field("classes", &RunConfig::classes, Read::optional, Write::unless_default),
    field("data_fingerprint", &RunConfig::data_fingerprint, Read::optional, Write::unless_default),
    field("allow_data_change", &RunConfig::allow_data_change, Read::optional, Write::unless_default),
    // The schedule's and the weight average's settings: written together by hand (to_json), only where they apply.
    field("lr_schedule", &RunConfig::lr_schedule, Read::optional, Write::by_hand),
    field("lr_warmup_method", &RunConfig::lr_warmup_method, Read::optional, Write::by_hand),
    field("lr_step_unit", &RunConfig::lr_step_unit, Read::optional, Write::by_hand),
    field("repeated_augment", &RunConfig::repeated_augment, Read::optional, Write::by_hand),
    field("ema_decay", &RunConfig::ema_decay, Read::optional, Write::by_hand),
    field("ema_decay_used", &RunConfig::ema_decay_used, Read::optional, Write::by_hand),
    field("ema_every", &RunConfig::ema_every, Read::optional, Write::by_hand),
    field("ema_copy_epochs", &RunConfig::ema_copy_epochs, Read::optional, Write::by_hand),
    field("ema_adjust", &RunConfig::ema_adjust, Read::optional, Write::by_hand)};

constexpr auto kRankRunFields = std::tuple{
    field("info", &RankRun::info), field("steps", &RankRun::steps),
    field("losses", &RankRun::losses, Read::optional, Write::unless_default),
    field("calibration", &RankRun::calibration, Read::optional, Write::unless_default)};

}  // namespace

double PhaseTimes::serial_sum_ms() const {
  return data_wait_ms + h2d_copy_ms + forward_ms + backward_ms + exposed_comm_ms + optimizer_ms;
}

double comm_window_ms(const std::vector<BucketRecord>& buckets) {
  if (buckets.empty()) return 0;
  double first_launch = buckets.front().launch_ms;
  double last_end = buckets.front().end_ms;
  for (const BucketRecord& bucket : buckets) {
    first_launch = std::min(first_launch, bucket.launch_ms);
    last_end = std::max(last_end, bucket.end_ms);
  }
  return std::max(0.0, last_end - first_launch);
}

std::vector<TimeInterval> comm_intervals(const std::vector<BucketRecord>& buckets) {
  std::vector<TimeInterval> intervals;
  intervals.reserve(buckets.size());
  for (const BucketRecord& bucket : buckets) intervals.push_back({bucket.start_ms, bucket.end_ms});
  return intervals;
}

double exposed_comm_ms(const std::vector<BucketRecord>& buckets, const std::vector<TimeInterval>& compute,
                       double serial_comm_ms) {
  DDPX_REQUIRE(serial_comm_ms >= 0, "exposed_comm_ms: serial comm time must be >= 0 ms, got {}", serial_comm_ms);
  return uncovered_ms(comm_intervals(buckets), compute) + serial_comm_ms;
}

double exposed_comm_ms(const std::vector<BucketRecord>& buckets, double backward_end_ms, double serial_comm_ms) {
  // Everything before the backward's end is compute: from the earliest time on the step's clock.
  double earliest = std::min(0.0, backward_end_ms);
  for (const BucketRecord& bucket : buckets) earliest = std::min(earliest, bucket.start_ms);
  return exposed_comm_ms(buckets, std::vector<TimeInterval>{{earliest, backward_end_ms}}, serial_comm_ms);
}

void fill_comm_phases(StepRecord& step, double backward_end_ms, double serial_comm_ms) {
  step.phases.comm_ms = comm_window_ms(step.buckets) + serial_comm_ms;
  step.phases.exposed_comm_ms = exposed_comm_ms(step.buckets, backward_end_ms, serial_comm_ms);
}

void to_json(json& j, const PhaseTimes& v) { jf::write_fields(j, v, kPhaseFields); }

void from_json(const json& j, PhaseTimes& v) {
  const char* record = "step phases";
  jf::read_fields(j, record, v, kPhaseFields);
  jf::for_each_field(kPhaseFields, [&](const auto& row) { require_time(record, row.key, v.*row.member, 0); });
  DDPX_REQUIRE(v.total_ms > 0, "{}: field 'total_ms' must be a time > 0 ms, got {}", record, v.total_ms);
}

void to_json(json& j, const BucketRecord& v) { jf::write_fields(j, v, kBucketFields); }

void from_json(const json& j, BucketRecord& v) {
  const char* record = "bucket record";
  jf::read_fields(j, record, v, kBucketFields);
  require_time(record, "launch_ms", v.launch_ms, -kMaxReportMs);
  require_time(record, "start_ms", v.start_ms, -kMaxReportMs);
  require_time(record, "end_ms", v.end_ms, -kMaxReportMs);
  DDPX_REQUIRE(v.bytes > 0, "bucket record {}: 'bytes' must be positive, got {}", v.index, v.bytes);
  DDPX_REQUIRE(v.launch_ms <= v.start_ms && v.start_ms <= v.end_ms,
               "bucket record {}: times must satisfy launch <= start <= end, got {} / {} / {} ms", v.index,
               v.launch_ms, v.start_ms, v.end_ms);
}

void to_json(json& j, const StepRecord& v) {
  j = json{{"step", v.step}, {"start_ms", v.start_ms}, {"phases", v.phases}, {"buckets", v.buckets}};
  j["gpu_busy_ms"] = v.gpu_busy_ms ? json(*v.gpu_busy_ms) : json(nullptr);
  if (v.device_start_ms) j["device_start_ms"] = *v.device_start_ms;
}

void from_json(const json& j, StepRecord& v) {
  const char* record = "step record";
  jf::require(j, record, "step", v.step);
  jf::optional(j, record, "start_ms", v.start_ms);
  require_time(record, "start_ms", v.start_ms, -kMaxReportMs);
  jf::require(j, record, "phases", v.phases);
  jf::optional(j, record, "buckets", v.buckets);
  v.gpu_busy_ms.reset();
  if (auto it = j.find("gpu_busy_ms"); it != j.end() && !it->is_null()) {
    double busy = 0;
    jf::read_value(*it, record, "gpu_busy_ms", busy);
    require_time(record, "gpu_busy_ms", busy, 0);
    v.gpu_busy_ms = busy;
  }
  v.device_start_ms.reset();
  if (auto it = j.find("device_start_ms"); it != j.end() && !it->is_null()) {
    double start = 0;
    jf::read_value(*it, record, "device_start_ms", start);
    require_time(record, "device_start_ms", start, -kMaxReportMs);
    v.device_start_ms = start;
  }
}

void to_json(json& j, const RankInfo& v) {
  jf::write_fields(j, v, kRankInfoFields);
  if (v.clock)
    j["clock"] = json{{"offset_ms", v.clock->offset_ms}, {"uncertainty_ms", v.clock->uncertainty_ms},
                      {"reference", "rank 0"}};
}

void from_json(const json& j, RankInfo& v) {
  const char* record = "rank info";
  jf::read_fields(j, record, v, kRankInfoFields);
  v.clock.reset();
  if (auto it = j.find("clock"); it != j.end() && !it->is_null()) {
    const char* clock_record = "rank info clock";
    ClockAlignment clock;
    jf::require(*it, clock_record, "offset_ms", clock.offset_ms);
    jf::require(*it, clock_record, "uncertainty_ms", clock.uncertainty_ms);
    require_time(clock_record, "offset_ms", clock.offset_ms, -kMaxReportMs);
    require_time(clock_record, "uncertainty_ms", clock.uncertainty_ms, 0);
    v.clock = clock;
  }
}

std::string OptimizerInfo::text() const {
  if (name.empty()) return "not recorded";
  if (name == "adamw")
    return fmt::format("adamw lr {:g} betas {:g},{:g} eps {:g} weight_decay {:g}", lr, beta1, beta2, eps,
                       weight_decay);
  return fmt::format("{} lr {:g} momentum {:g}{} weight_decay {:g}", name, lr, momentum, nesterov ? " nesterov" : "",
                     weight_decay);
}

void to_json(json& j, const OptimizerInfo& v) {
  j = json{{"name", v.name}, {"lr", v.lr}, {"weight_decay", v.weight_decay}};
  if (v.name == "adamw") {
    j["beta1"] = v.beta1;
    j["beta2"] = v.beta2;
    j["eps"] = v.eps;
  } else {
    j["momentum"] = v.momentum;
    j["nesterov"] = v.nesterov;
  }
}

void from_json(const json& j, OptimizerInfo& v) {
  const char* record = "optimizer";
  v = OptimizerInfo{};
  jf::require(j, record, "name", v.name);
  DDPX_REQUIRE(v.name == "sgd" || v.name == "adamw", "optimizer: field 'name' must be \"sgd\" or \"adamw\", got \"{}\"",
               v.name.substr(0, 40));
  jf::require(j, record, "lr", v.lr);
  jf::optional(j, record, "weight_decay", v.weight_decay);
  jf::optional(j, record, "momentum", v.momentum);
  jf::optional(j, record, "nesterov", v.nesterov);
  jf::optional(j, record, "beta1", v.beta1);
  jf::optional(j, record, "beta2", v.beta2);
  jf::optional(j, record, "eps", v.eps);
  for (const auto& [name, value] : {std::pair{"lr", v.lr}, {"weight_decay", v.weight_decay},
                                    {"momentum", v.momentum}, {"beta1", v.beta1}, {"beta2", v.beta2}, {"eps", v.eps}})
    DDPX_REQUIRE(std::isfinite(value) && value >= 0, "optimizer: field '{}' must be a finite number >= 0, got {}",
                 name, value);
}

void to_json(json& j, const LossPoint& v) { jf::write_fields(j, v, kLossFields); }

void from_json(const json& j, LossPoint& v) {
  jf::read_fields(j, "loss point", v, kLossFields);
  DDPX_REQUIRE(v.step >= 0, "loss point: field 'step' must be >= 0, got {}", v.step);
  DDPX_REQUIRE(std::isfinite(v.loss), "loss point at step {}: field 'loss' must be finite, got {}", v.step, v.loss);
}

void to_json(json& j, const EvalPoint& v) {
  jf::write_fields(j, v, kEvalFields);
  if (v.epoch) j["epoch"] = *v.epoch;
}

void from_json(const json& j, EvalPoint& v) {
  const char* record = "evaluation";
  jf::read_fields(j, record, v, kEvalFields);
  v.epoch.reset();
  if (auto it = j.find("epoch"); it != j.end() && !it->is_null()) {
    double epoch = 0;
    jf::read_value(*it, record, "epoch", epoch);
    v.epoch = epoch;
  }
  DDPX_REQUIRE(v.step >= 0 && v.count > 0 && std::isfinite(v.loss) && v.top1 >= 0 && v.top1 <= 100 &&
                   v.top5 >= 0 && v.top5 <= 100 && (!v.epoch || std::isfinite(*v.epoch)),
               "evaluation at step {}: step >= 0, count > 0, a finite loss and accuracies in [0, 100] expected, got "
               "count {}, loss {}, top-1 {}, top-5 {}", v.step, v.count, v.loss, v.top1, v.top5);
  DDPX_REQUIRE(v.weights == "model" || v.weights == "ema",
               "evaluation at step {}: field 'weights' must be \"model\" or \"ema\", got \"{}\"", v.step,
               v.weights.substr(0, 40));
}

void to_json(json& j, const RunThroughput& v) { jf::write_fields(j, v, kThroughputFields); }

void from_json(const json& j, RunThroughput& v) {
  jf::read_fields(j, "throughput", v, kThroughputFields);
  DDPX_REQUIRE(std::isfinite(v.steps_per_s) && v.steps_per_s > 0 && std::isfinite(v.images_per_s) &&
                   v.images_per_s > 0,
               "throughput: 'steps_per_s' ({}) and 'images_per_s' ({}) must be finite and positive", v.steps_per_s,
               v.images_per_s);
}

void to_json(json& j, const CalibrationRecord& v) { jf::write_fields(j, v, kCalibrationFields); }

void from_json(const json& j, CalibrationRecord& v) {
  const char* record = "calibration record";
  jf::read_fields(j, record, v, kCalibrationFields);
  require_time(record, "reduce_ms", v.reduce_ms, 0);
}

void to_json(json& j, const DdpCost& v) { jf::write_fields(j, v, kDdpCostFields); }

void from_json(const json& j, DdpCost& v) {
  const char* record = "ddp cost";
  v.hook_work_sampled = true;  // reports written before the field carried a measured figure
  jf::read_fields(j, record, v, kDdpCostFields);
  DDPX_REQUIRE(v.calibration_steps > 0, "ddp cost: field 'calibration_steps' must be positive, got {}",
               v.calibration_steps);
  for (const auto& [name, ms] : {std::pair{"measured_step_ms", v.measured_step_ms}, {"plain_step_ms", v.plain_step_ms},
                                 {"exposed_comm_ms", v.exposed_comm_ms}, {"hook_work_ms", v.hook_work_ms}})
    require_time(record, name, ms, 0);
  for (const auto& [name, ms] : {std::pair{"cost_ms", v.cost_ms}, {"other_ms", v.other_ms}})
    require_time(record, name, ms, -kMaxReportMs);  // a cost below the noise is negative
}

void to_json(json& j, const GradientTensorInfo& v) { jf::write_fields(j, v, kGradientTensorFields); }

void from_json(const json& j, GradientTensorInfo& v) {
  const char* record = "gradient tensor";
  jf::read_fields(j, record, v, kGradientTensorFields);
  int64_t product = 1;
  bool shape_ok = !v.shape.empty();
  for (int64_t extent : v.shape) {
    shape_ok = shape_ok && extent > 0 && product <= (int64_t{1} << 50) / extent;
    if (shape_ok) product *= extent;
  }
  DDPX_REQUIRE(v.numel > 0 && v.offset >= 0 && shape_ok && product == v.numel,
               "gradient tensor '{}': numel {} must be positive and equal the product of its shape, at a "
               "non-negative offset (got offset {})", v.name.substr(0, 80), v.numel, v.offset);
}

void to_json(json& j, const RunConfig& v) {
  jf::write_fields(j, v, kRunConfigFields);
  if (v.steps > 0) j["seed"] = v.seed, j["steps"] = v.steps, j["warmup"] = v.warmup;
  if (!v.optimizer.name.empty()) j["optimizer"] = v.optimizer;
  if (!v.lr_schedule.empty())
    j["lr_schedule"] = v.lr_schedule, j["lr_warmup_method"] = v.lr_warmup_method, j["lr_step_unit"] = v.lr_step_unit;
  if (v.repeated_augment > 1) j["repeated_augment"] = v.repeated_augment;
  if (v.ema_decay != 0)
    j["ema_decay"] = v.ema_decay, j["ema_decay_used"] = v.ema_decay_used, j["ema_every"] = v.ema_every,
    j["ema_copy_epochs"] = v.ema_copy_epochs, j["ema_adjust"] = v.ema_adjust;
  if (v.torchvision)
    j["torchvision"] = json{{"command_line", true}, {"settings", v.torchvision_settings}, {"ddpx_args", v.torchvision_args}};
}

void from_json(const json& j, RunConfig& v) {
  const char* record = "run config";
  jf::read_fields(j, record, v, kRunConfigFields);
  if (j.contains("torchvision")) {
    const json& tv = j.at("torchvision");
    DDPX_REQUIRE(tv.is_object(), "run config: 'torchvision' must be an object, got {}", tv.type_name());
    const char* tv_record = "run config's torchvision";
    jf::require(tv, tv_record, "command_line", v.torchvision);
    jf::require(tv, tv_record, "settings", v.torchvision_settings);
    jf::require(tv, tv_record, "ddpx_args", v.torchvision_args);
  }
  for (size_t k = 1; k < v.gradient_tensors.size(); ++k) {
    const GradientTensorInfo& before = v.gradient_tensors[k - 1];
    DDPX_REQUIRE(v.gradient_tensors[k].offset >= before.offset + before.numel,
                 "run config: 'gradient_tensors' must be in buffer order without overlap: '{}' at offset {} starts "
                 "inside '{}' (offset {}, {} elements)", v.gradient_tensors[k].name.substr(0, 80),
                 v.gradient_tensors[k].offset, before.name.substr(0, 80), before.offset, before.numel);
  }
  static const std::regex iso_utc(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)");
  // The length check first: std::regex recurses per character, and the field comes from a file.
  DDPX_REQUIRE(v.started_utc.empty() || (v.started_utc.size() == 20 && std::regex_match(v.started_utc, iso_utc)),
               "run config: field 'started_utc' must be an ISO 8601 UTC time like 2026-12-01T09:37:00Z, got \"{}\"",
               v.started_utc.substr(0, 40));
  DDPX_REQUIRE(v.batch > 0 && v.grad_accum > 0 && v.world > 0,
               "run config: batch ({}), grad_accum ({}) and world ({}) must be positive", v.batch, v.grad_accum,
               v.world);
}

void to_json(json& j, const RankRun& v) { jf::write_fields(j, v, kRankRunFields); }

void from_json(const json& j, RankRun& v) {
  jf::read_fields(j, "rank run", v, kRankRunFields);
  for (size_t k = 1; k < v.losses.size(); ++k)
    DDPX_REQUIRE(v.losses[k - 1].step < v.losses[k].step,
                 "rank run {}: 'losses' must be in increasing step order, step {} follows step {}", v.info.rank,
                 v.losses[k].step, v.losses[k - 1].step);
  // A trace draws a rank's steps one after the other (analysis/trace_check.hpp checks "Batch N" order).
  for (size_t k = 1; k < v.steps.size(); ++k)
    DDPX_REQUIRE(v.steps[k - 1].step < v.steps[k].step,
                 "rank run {}: 'steps' must be in increasing step order, step {} follows step {}", v.info.rank,
                 v.steps[k].step, v.steps[k - 1].step);
}

void to_json(json& j, const RunReport& v) {
  j = json{{"config", v.config}, {"ranks", v.ranks}};
  if (v.throughput) j["throughput"] = *v.throughput;
  if (v.ddp_cost) j["ddp_cost"] = *v.ddp_cost;
  if (!v.evaluations.empty()) j["evaluations"] = v.evaluations;
  if (!v.attempts.empty()) {
    json attempts = json::array();
    for (const RunAttempt& a : v.attempts)
      attempts.push_back(json{{"start_step", a.start_step}, {"end_step", a.end_step}, {"reason", a.reason}});
    j["attempts"] = attempts;
  }
}

void from_json(const json& j, RunReport& v) {
  jf::require(j, "run report", "config", v.config);
  jf::require(j, "run report", "ranks", v.ranks);
  v.throughput.reset();
  if (auto it = j.find("throughput"); it != j.end() && !it->is_null()) v.throughput = it->get<RunThroughput>();
  v.ddp_cost.reset();
  if (auto it = j.find("ddp_cost"); it != j.end() && !it->is_null()) v.ddp_cost = it->get<DdpCost>();
  v.evaluations.clear();
  jf::optional(j, "run report", "evaluations", v.evaluations);
  v.attempts.clear();
  if (auto it = j.find("attempts"); it != j.end() && !it->is_null()) {
    DDPX_REQUIRE(it->is_array(), "run report: field 'attempts' must be an array");
    for (const json& item : *it) {
      RunAttempt a;
      jf::require(item, "attempt", "start_step", a.start_step);
      jf::require(item, "attempt", "end_step", a.end_step);
      jf::require(item, "attempt", "reason", a.reason);
      DDPX_REQUIRE(a.start_step >= 0 && a.end_step >= a.start_step,
                   "run report: an attempt must end at or after its start step, got {} to {}", a.start_step,
                   a.end_step);
      v.attempts.push_back(std::move(a));
    }
  }
}

double report_steps_per_s(const RunReport& report) {
  if (report.throughput) return report.throughput->steps_per_s;
  DDPX_REQUIRE(!report.ranks.empty() && !report.ranks.front().steps.empty(),
               "run report: no throughput and no measured steps of rank 0 to compute it from");
  double total_ms = 0;
  for (const StepRecord& step : report.ranks.front().steps) total_ms += step.phases.total_ms;
  return static_cast<double>(report.ranks.front().steps.size()) * 1000.0 / total_ms;
}

RunReport load_run_report(const std::string& path) {
  std::string text;
  try {
    text = read_small_file(path, kMaxReportBytes, "run report");  // a regular file, never a FIFO that blocks
  } catch (const Error& e) {
    fail("cannot open run report '{}': check the path (written by `ddpx train --report FILE`): {}", path, e.what());
  }
  json parsed;
  try {
    parsed = parse_json(text, "the file");
  } catch (const json::exception& e) {
    fail("run report '{}' is not valid JSON: {}", path, e.what());
  } catch (const Error& e) {
    fail("run report '{}': {}", path, e.what());
  }
  // A Chrome/Perfetto trace (an object with traceEvents, or the bare array form) is the commonest wrong file.
  DDPX_REQUIRE(!(parsed.is_array() || (parsed.is_object() && parsed.contains("traceEvents") && !parsed.contains("config"))),
               "'{}' is a Chrome/Perfetto trace, not a run report: check it with `ddpx report --check-trace {}`, or "
               "give the run report (`ddpx train --report FILE`)", path, path);
  RunReport report;
  try {
    text = std::string();  // the text is no longer needed: half the peak memory of a large report
    // The report's own size bound, before anything is built from it (issue 37 item 7: 100,000 ranks ran out of
    // memory in the analysis).
    if (const auto ranks = parsed.find("ranks"); parsed.is_object() && ranks != parsed.end() && ranks->is_array())
      DDPX_REQUIRE(ranks->size() <= kMaxReportRanks, "the file lists {} ranks; ddpx reads run reports of at most {} "
                   "ranks (a report records every rank's steps: record fewer ranks, or analyse a subset)",
                   ranks->size(), kMaxReportRanks);
    report = parsed.get<RunReport>();
  } catch (const json::exception& e) {
    fail("run report '{}' is not valid JSON: {}", path, e.what());
  } catch (const Error& e) {
    fail("run report '{}': {}", path, e.what());
  }
  DDPX_REQUIRE(!report.ranks.empty(), "run report '{}' has no ranks", path);
  DDPX_REQUIRE(static_cast<int64_t>(report.ranks.size()) == report.config.world,
               "run report '{}': config.world is {} but {} rank(s) are listed; the file is damaged", path,
               report.config.world, report.ranks.size());
  for (size_t k = 0; k < report.ranks.size(); ++k) {
    DDPX_REQUIRE(report.ranks[k].info.rank == static_cast<int>(k),
                 "run report '{}': ranks must be listed in order 0..{}, entry {} is rank {}", path,
                 report.ranks.size() - 1, k, report.ranks[k].info.rank);
    DDPX_REQUIRE(!report.ranks[k].steps.empty(), "run report '{}': rank {} has no measured steps", path, k);
    DDPX_REQUIRE(report.ranks[k].info.world_size == report.config.world,
                 "run report '{}': rank {} says world size {} but config.world is {}; the file is damaged", path, k,
                 report.ranks[k].info.world_size, report.config.world);
  }
  return report;
}

void save_run_report(const RunReport& report, const std::string& path) {
  try {
    write_output_text(path, "--report", json(report).dump(1) + "\n");  // atomic: never a truncated report
  } catch (const Error& e) {
    fail("writing run report '{}' failed; an earlier file there is unchanged: {}", path, e.what());
  }
}

}  // namespace ddpx
