// JSON conversion and comm-phase helpers for the step records (see step_record.hpp).
#include "profile/step_record.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include <fstream>
#include <regex>
#include <utility>

#include "core/error.hpp"
#include "core/json_parse.hpp"
#include "io/output_file.hpp"
#include "profile/json_fields.hpp"

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

void to_json(json& j, const PhaseTimes& v) {
  j = json{{"data_wait_ms", v.data_wait_ms}, {"h2d_copy_ms", v.h2d_copy_ms},
           {"forward_ms", v.forward_ms},     {"backward_ms", v.backward_ms},
           {"comm_ms", v.comm_ms},           {"exposed_comm_ms", v.exposed_comm_ms},
           {"optimizer_ms", v.optimizer_ms}, {"total_ms", v.total_ms}};
}

void from_json(const json& j, PhaseTimes& v) {
  const char* record = "step phases";
  jf::optional(j, record, "data_wait_ms", v.data_wait_ms);
  jf::optional(j, record, "h2d_copy_ms", v.h2d_copy_ms);
  jf::require(j, record, "forward_ms", v.forward_ms);
  jf::require(j, record, "backward_ms", v.backward_ms);
  jf::optional(j, record, "comm_ms", v.comm_ms);
  jf::optional(j, record, "exposed_comm_ms", v.exposed_comm_ms);
  jf::optional(j, record, "optimizer_ms", v.optimizer_ms);
  jf::require(j, record, "total_ms", v.total_ms);
  for (const auto& [name, ms] : {std::pair{"data_wait_ms", v.data_wait_ms}, {"h2d_copy_ms", v.h2d_copy_ms},
                                 {"forward_ms", v.forward_ms}, {"backward_ms", v.backward_ms}, {"comm_ms", v.comm_ms},
                                 {"exposed_comm_ms", v.exposed_comm_ms}, {"optimizer_ms", v.optimizer_ms}})
    require_time(record, name, ms, 0);
  require_time(record, "total_ms", v.total_ms, 0);
  DDPX_REQUIRE(v.total_ms > 0, "{}: field 'total_ms' must be a time > 0 ms, got {}", record, v.total_ms);
}

void to_json(json& j, const BucketRecord& v) {
  j = json{{"index", v.index},         {"bytes", v.bytes},           {"elements", v.elements},
           {"hook", v.hook},           {"collective", v.collective}, {"launch_ms", v.launch_ms},
           {"start_ms", v.start_ms},   {"end_ms", v.end_ms},         {"stream", v.stream}};
}

void from_json(const json& j, BucketRecord& v) {
  const char* record = "bucket record";
  jf::require(j, record, "index", v.index);
  jf::require(j, record, "bytes", v.bytes);
  jf::optional(j, record, "elements", v.elements);
  jf::optional(j, record, "hook", v.hook);
  jf::optional(j, record, "collective", v.collective);
  jf::require(j, record, "launch_ms", v.launch_ms);
  jf::require(j, record, "start_ms", v.start_ms);
  jf::require(j, record, "end_ms", v.end_ms);
  jf::optional(j, record, "stream", v.stream);
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
  j = json{{"rank", v.rank},
           {"device_name", v.device_name},
           {"precision", v.precision},
           {"world_size", v.world_size},
           {"transport", v.transport}};
  if (!v.host.empty()) j["host"] = v.host;
  if (v.clock)
    j["clock"] = json{{"offset_ms", v.clock->offset_ms}, {"uncertainty_ms", v.clock->uncertainty_ms},
                      {"reference", "rank 0"}};
}

void from_json(const json& j, RankInfo& v) {
  const char* record = "rank info";
  jf::require(j, record, "rank", v.rank);
  jf::optional(j, record, "device_name", v.device_name);
  jf::optional(j, record, "precision", v.precision);
  jf::require(j, record, "world_size", v.world_size);
  jf::optional(j, record, "transport", v.transport);
  jf::optional(j, record, "host", v.host);
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

void to_json(json& j, const LossPoint& v) { j = json{{"step", v.step}, {"loss", v.loss}}; }

void from_json(const json& j, LossPoint& v) {
  jf::require(j, "loss point", "step", v.step);
  jf::require(j, "loss point", "loss", v.loss);
  DDPX_REQUIRE(v.step >= 0, "loss point: field 'step' must be >= 0, got {}", v.step);
  DDPX_REQUIRE(std::isfinite(v.loss), "loss point at step {}: field 'loss' must be finite, got {}", v.step, v.loss);
}

void to_json(json& j, const EvalPoint& v) {
  j = json{{"step", v.step}, {"loss", v.loss}, {"top1", v.top1}, {"top5", v.top5}, {"count", v.count},
           {"weights", v.weights}};
  if (v.epoch) j["epoch"] = *v.epoch;
}

void from_json(const json& j, EvalPoint& v) {
  const char* record = "evaluation";
  jf::require(j, record, "step", v.step);
  jf::require(j, record, "loss", v.loss);
  jf::require(j, record, "top1", v.top1);
  jf::require(j, record, "top5", v.top5);
  jf::require(j, record, "count", v.count);
  jf::optional(j, record, "weights", v.weights);
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

void to_json(json& j, const RunThroughput& v) {
  j = json{{"steps_per_s", v.steps_per_s}, {"images_per_s", v.images_per_s}};
}

void from_json(const json& j, RunThroughput& v) {
  jf::require(j, "throughput", "steps_per_s", v.steps_per_s);
  jf::require(j, "throughput", "images_per_s", v.images_per_s);
  DDPX_REQUIRE(std::isfinite(v.steps_per_s) && v.steps_per_s > 0 && std::isfinite(v.images_per_s) &&
                   v.images_per_s > 0,
               "throughput: 'steps_per_s' ({}) and 'images_per_s' ({}) must be finite and positive", v.steps_per_s,
               v.images_per_s);
}

void to_json(json& j, const CalibrationRecord& v) {
  j = json{{"step", v.step}, {"plain", v.plain}, {"reduce_ms", v.reduce_ms}};
}

void from_json(const json& j, CalibrationRecord& v) {
  const char* record = "calibration record";
  jf::require(j, record, "step", v.step);
  jf::require(j, record, "plain", v.plain);
  jf::require(j, record, "reduce_ms", v.reduce_ms);
  require_time(record, "reduce_ms", v.reduce_ms, 0);
}

void to_json(json& j, const DdpCost& v) {
  j = json{{"calibration_steps", v.calibration_steps}, {"measured_step_ms", v.measured_step_ms},
           {"plain_step_ms", v.plain_step_ms},           {"cost_ms", v.cost_ms},
           {"exposed_comm_ms", v.exposed_comm_ms},       {"hook_work_ms", v.hook_work_ms},
           {"hook_work_sampled", v.hook_work_sampled}, {"other_ms", v.other_ms}};
}

void from_json(const json& j, DdpCost& v) {
  const char* record = "ddp cost";
  jf::require(j, record, "calibration_steps", v.calibration_steps);
  jf::require(j, record, "measured_step_ms", v.measured_step_ms);
  jf::require(j, record, "plain_step_ms", v.plain_step_ms);
  jf::require(j, record, "cost_ms", v.cost_ms);
  jf::require(j, record, "exposed_comm_ms", v.exposed_comm_ms);
  jf::require(j, record, "hook_work_ms", v.hook_work_ms);
  v.hook_work_sampled = true;  // reports written before the field carried a measured figure
  jf::optional(j, record, "hook_work_sampled", v.hook_work_sampled);
  jf::require(j, record, "other_ms", v.other_ms);
  DDPX_REQUIRE(v.calibration_steps > 0, "ddp cost: field 'calibration_steps' must be positive, got {}",
               v.calibration_steps);
  for (const auto& [name, ms] : {std::pair{"measured_step_ms", v.measured_step_ms}, {"plain_step_ms", v.plain_step_ms},
                                 {"exposed_comm_ms", v.exposed_comm_ms}, {"hook_work_ms", v.hook_work_ms}})
    require_time(record, name, ms, 0);
  for (const auto& [name, ms] : {std::pair{"cost_ms", v.cost_ms}, {"other_ms", v.other_ms}})
    require_time(record, name, ms, -kMaxReportMs);  // a cost below the noise is negative
}

void to_json(json& j, const GradientTensorInfo& v) {
  j = json{{"name", v.name}, {"shape", v.shape}, {"offset", v.offset}, {"numel", v.numel}};
}

void from_json(const json& j, GradientTensorInfo& v) {
  const char* record = "gradient tensor";
  jf::require(j, record, "name", v.name);
  jf::require(j, record, "shape", v.shape);
  jf::require(j, record, "offset", v.offset);
  jf::require(j, record, "numel", v.numel);
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
  j = json{{"model", v.model},         {"batch", v.batch},
           {"precision", v.precision}, {"hook", v.hook},
           {"bucket_mb", v.bucket_mb}, {"first_bucket_mb", v.first_bucket_mb},
           {"overlap", v.overlap},     {"grad_accum", v.grad_accum},
           {"world", v.world},         {"ddp", v.ddp},
           {"workers", v.workers}};
  if (!v.weight_grads.empty()) j["weight_grads"] = v.weight_grads;
  if (!v.backend.empty()) j["backend"] = v.backend;
  if (v.steps > 0) j["seed"] = v.seed, j["steps"] = v.steps, j["warmup"] = v.warmup;
  if (!v.data.empty()) j["data"] = v.data;
  if (!v.ddpx_version.empty()) j["ddpx_version"] = v.ddpx_version;
  if (!v.ddpx_commit.empty()) j["ddpx_commit"] = v.ddpx_commit;
  if (!v.started_utc.empty()) j["started_utc"] = v.started_utc;
  if (!v.command_line.empty()) j["command_line"] = v.command_line;
  if (!v.optimizer.name.empty()) j["optimizer"] = v.optimizer;
  if (!v.gradient_tensors.empty()) j["gradient_tensors"] = v.gradient_tensors;
  if (!v.classes.empty()) j["classes"] = v.classes;
  if (!v.data_fingerprint.empty()) j["data_fingerprint"] = v.data_fingerprint;
  if (v.allow_data_change) j["allow_data_change"] = true;
  if (v.torchvision)
    j["torchvision"] = json{{"command_line", true}, {"settings", v.torchvision_settings}, {"ddpx_args", v.torchvision_args}};
}

void from_json(const json& j, RunConfig& v) {
  const char* record = "run config";
  jf::optional(j, record, "model", v.model);
  jf::require(j, record, "batch", v.batch);
  jf::require(j, record, "precision", v.precision);
  jf::optional(j, record, "weight_grads", v.weight_grads);
  jf::optional(j, record, "hook", v.hook);
  jf::optional(j, record, "bucket_mb", v.bucket_mb);
  jf::optional(j, record, "first_bucket_mb", v.first_bucket_mb);
  jf::optional(j, record, "overlap", v.overlap);
  jf::optional(j, record, "grad_accum", v.grad_accum);
  jf::require(j, record, "world", v.world);
  jf::optional(j, record, "ddp", v.ddp);
  jf::optional(j, record, "workers", v.workers);
  jf::optional(j, record, "backend", v.backend);
  jf::optional(j, record, "seed", v.seed);
  jf::optional(j, record, "steps", v.steps);
  jf::optional(j, record, "warmup", v.warmup);
  jf::optional(j, record, "data", v.data);
  jf::optional(j, record, "ddpx_version", v.ddpx_version);
  jf::optional(j, record, "ddpx_commit", v.ddpx_commit);
  jf::optional(j, record, "started_utc", v.started_utc);
  jf::optional(j, record, "command_line", v.command_line);
  jf::optional(j, record, "optimizer", v.optimizer);
  jf::optional(j, record, "gradient_tensors", v.gradient_tensors);
  jf::optional(j, record, "classes", v.classes);
  jf::optional(j, record, "data_fingerprint", v.data_fingerprint);
  jf::optional(j, record, "allow_data_change", v.allow_data_change);
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

void to_json(json& j, const RankRun& v) {
  j = json{{"info", v.info}, {"steps", v.steps}};
  if (!v.losses.empty()) j["losses"] = v.losses;
  if (!v.calibration.empty()) j["calibration"] = v.calibration;
}

void from_json(const json& j, RankRun& v) {
  jf::require(j, "rank run", "info", v.info);
  jf::require(j, "rank run", "steps", v.steps);
  jf::optional(j, "rank run", "losses", v.losses);
  jf::optional(j, "rank run", "calibration", v.calibration);
  for (size_t k = 1; k < v.losses.size(); ++k)
    DDPX_REQUIRE(v.losses[k - 1].step < v.losses[k].step,
                 "rank run {}: 'losses' must be in increasing step order, step {} follows step {}", v.info.rank,
                 v.losses[k].step, v.losses[k - 1].step);
  // A trace draws a rank's steps one after the other (profile/trace_check.hpp checks "Batch N" order).
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
