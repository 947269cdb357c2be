// Plain records of what one training step cost, filled by the trainer and read by every analysis in analysis/.
// Guarantees:
//  - Only plain data: nothing here depends on dist/, ddp/ or CUDA. The trainer measures (CUDA events, host
//    clocks) and copies the numbers in; report/ never measures anything itself.
//  - All times are milliseconds. Phase times are durations on the step's critical path; bucket times are
//    offsets from the step's start (the same clock as StepRecord::start_ms), so a step's buckets and phases can be
//    drawn on one timeline. StepRecord::start_ms and device_start_ms are on the run clock: milliseconds since rank
//    0's run start on rank 0's clock, every rank's own clock shifted by its measured offset (RankInfo::clock), so
//    the steps of all ranks share one timeline. See Note [One clock for all ranks] (docs/design.md).
//  - Every struct converts to and from JSON (nlohmann); reading names the missing or mistyped field, and refuses
//    a time that is not finite or lies beyond 10^12 ms (31 years), so every time fits a trace's int64 nanoseconds.
//  - What made a run (version, commit, start time, host, command line, optimizer, losses, throughput) is optional
//    on read: reports written before these fields existed still load; a field that is present is validated
//    (finite losses in increasing step order, an ISO 8601 UTC start time, a known optimizer, ...).
//  - load_run_report() bounds what it reads: a regular file of at most 4 GiB, listing at most 16,384 ranks (a
//    larger one is refused naming the count before anything is built from it).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "report/time_intervals.hpp"

namespace ddpx {

// Where one step's time went. The serial parts (data_wait, h2d_copy, forward, backward, exposed_comm,
// optimizer) add up to total within a few percent; comm overlaps backward and is not one of them.
struct PhaseTimes {
  double data_wait_ms = 0;     // host waited for the loader to hand over the next batch
  double h2d_copy_ms = 0;      // compute stream waited for the host-to-device copy (the part not hidden)
  double forward_ms = 0;       // forward pass and loss
  double backward_ms = 0;      // backward compute, start to the last gradient kernel
  double comm_ms = 0;          // first bucket launch to last bucket completion (overlapped part included)
  double exposed_comm_ms = 0;  // comm not hidden under backward: see exposed_comm_ms() below
  double optimizer_ms = 0;     // zeroing the gradients, the optimizer update (and bf16 weight copy)
  double total_ms = 0;         // the whole step, wall clock

  // data_wait + h2d_copy + forward + backward + exposed_comm + optimizer.
  double serial_sum_ms() const;
  bool operator==(const PhaseTimes&) const = default;
};

// One gradient bucket's collective in one step.
struct BucketRecord {
  int index = 0;                          // position in the bucket plan (0 = first launched)
  int64_t bytes = 0;                      // bytes handed to the collective (after the hook's compression)
  int64_t elements = 0;                   // gradient elements the bucket covers
  std::string hook = "allreduce";         // "allreduce", "fp16", "bf16", "powersgd:4", ...
  std::string collective = "all_reduce";  // "all_reduce", "broadcast", "all_gather", "reduce_scatter"
  double launch_ms = 0;                   // bucket became ready and was queued on the comm stream
  double start_ms = 0;                    // communication began on the device
  double end_ms = 0;                      // communication completed
  std::string stream = "comm";            // the stream (trace thread) it ran on
  bool operator==(const BucketRecord&) const = default;
};

// One optimizer step on one rank (with gradient accumulation: the whole accumulation cycle).
struct StepRecord {
  int64_t step = 0;                   // step number as the trainer counts it
  double start_ms = 0;                // step start, from the rank's run start
  PhaseTimes phases;
  std::vector<BucketRecord> buckets;  // in launch order
  std::optional<double> gpu_busy_ms;  // time the compute stream ran kernels, when measured (CUPTI/nsys)
  // CUDA: when the step's first event ran on the GPU (run clock, like start_ms, which is the host's start of the
  // step); the device part of the step (h2d copy wait to optimizer end) follows from there. Absent on the CPU.
  std::optional<double> device_start_ms;
  bool operator==(const StepRecord&) const = default;
};

// One calibration step (`ddpx train --calibrate-steps N`, see Note [Calibration steps] in train/calibration.hpp):
// a warm-up step whose backward ran without the reducer, its gradients reduced after the backward pass so that
// the run's math is unchanged, timed like a measured step.
struct CalibrationRecord {
  int64_t step = 0;
  PhaseTimes plain;      // the step as it runs without DDP: comm_ms and exposed_comm_ms 0, total_ms without reduce_ms
  double reduce_ms = 0;  // the reduction after the backward pass, which the plain step does not have
  bool operator==(const CalibrationRecord&) const = default;
};

// What DDP costs a step, against the calibrated plain step, split into what can be attributed; the parts add up:
// exposed_comm_ms + hook_work_ms + other_ms == cost_ms == measured_step_ms - plain_step_ms (other_ms is the
// remainder, so it carries the rounding and the noise; it is negative when the plain steps ran slower).
// Each figure is the median over ranks of the per-rank median over steps (the breakdown's medians).
struct DdpCost {
  int64_t calibration_steps = 0;  // per rank
  double measured_step_ms = 0;    // the DDP step (the breakdown's median total)
  double plain_step_ms = 0;       // the calibrated plain step
  double cost_ms = 0;             // measured_step_ms - plain_step_ms
  double exposed_comm_ms = 0;     // communication not covered by compute (the breakdown's exposed_comm)
  double hook_work_ms = 0;        // the hooks' time that overlapped compute (bucket intervals minus the exposed part)
  // Whether every rank timed its buckets in some measured step (CUDA runs time them at progress lines only): when
  // false, hook_work_ms is 0 because nothing was measured, not because the hooks took no time, and says so.
  bool hook_work_sampled = true;
  double other_ms = 0;            // the rest: reducer machinery, a backward slowed by sharing the device
  double fraction() const { return measured_step_ms > 0 ? cost_ms / measured_step_ms : 0; }
  // What DDP's work beside the compute cost the step: everything but the exposed communication. This, not
  // hook_work_ms, is the hooks' and the reducer's price: hook kernels that overlap the backward pass slow it by less
  // than their own duration (other_ms is then negative), and that is what people read in the verdict.
  double hidden_ms() const { return cost_ms - exposed_comm_ms; }
  bool operator==(const DdpCost&) const = default;
};

// A rank's clock against rank 0's, measured at start (dist/clock_offset.hpp). offset_ms was added to this rank's
// own times to put them on rank 0's clock; the true offset is within uncertainty_ms of it.
struct ClockAlignment {
  double offset_ms = 0;
  double uncertainty_ms = 0;
  bool operator==(const ClockAlignment&) const = default;
};

// Who measured: one per rank.
struct RankInfo {
  int rank = 0;
  std::string device_name;  // "NVIDIA H200"
  std::string precision;    // "fp32", "tf32", "bf16"
  int world_size = 1;
  std::string transport;    // how this rank reaches its peers: "P2P/CUMEM/read", "SHM/direct/direct", "NVLink", ""
  std::string host;         // the machine's host name; "" in reports written before it was recorded
  std::optional<ClockAlignment> clock;  // absent in reports written before it was recorded
  bool operator==(const RankInfo&) const = default;
};

// The optimizer and its hyperparameters. JSON holds only the ones that apply: sgd has momentum and nesterov,
// adamw beta1, beta2 and eps; both have lr and weight_decay. name "" = not recorded (older reports).
struct OptimizerInfo {
  std::string name;  // "sgd" or "adamw"
  double lr = 0, momentum = 0, weight_decay = 0, beta1 = 0, beta2 = 0, eps = 0;
  bool nesterov = false;
  bool operator==(const OptimizerInfo&) const = default;
  // "sgd lr 0.01 momentum 0.9 nesterov weight_decay 0" / "adamw lr 0.001 betas 0.9,0.999 eps 1e-08 ...".
  std::string text() const;
};

// The training loss at one logged step (a progress line).
struct LossPoint {
  int64_t step = 0;
  double loss = 0;
  bool operator==(const LossPoint&) const = default;
};

// One evaluation on --val (train/evaluation.hpp), as the run's progress line and --metrics line give it.
struct EvalPoint {
  int64_t step = 0;
  std::optional<double> epoch;  // the fraction of the training set seen; absent for sources without epochs
  double loss = 0, top1 = 0, top5 = 0;  // mean cross-entropy; accuracies in percent
  int64_t count = 0;                    // images evaluated (all ranks)
  std::string weights = "model";        // "model", or "ema" for the --ema-decay average
  bool operator==(const EvalPoint&) const = default;
};

// One attempt of a run that was resumed (--resume): the steps it contributed, start_step (exclusive) to end_step,
// and why it ended: "finished", or "stopped; the next attempt resumed from its checkpoint at step N" (a stopped
// attempt's steps after that checkpoint ran again in the next one, so end_step is where the run's weights came from).
struct RunAttempt {
  int64_t start_step = 0, end_step = 0;
  std::string reason;
  bool operator==(const RunAttempt&) const = default;
};

// One tensor of the flat fp32 gradient buffer, in buffer order (= the order gradients become final in backward).
// Recorded so that analyses (ddpx predict) can re-cut buckets and size PowerSGD's factors without the model code.
struct GradientTensorInfo {
  std::string name;            // torchvision name
  std::vector<int64_t> shape;  // product == numel
  int64_t offset = 0;          // elements from the start of the gradient buffer (256-byte aligned; padding between)
  int64_t numel = 0;
  bool operator==(const GradientTensorInfo&) const = default;
};

// The run's throughput as train's summary line states it (steps after warm-up over their wall-clock time).
struct RunThroughput {
  double steps_per_s = 0;
  double images_per_s = 0;
  bool operator==(const RunThroughput&) const = default;
};

// What was run: the flags of `ddpx train` that shape a step.
struct RunConfig {
  std::string model = "vit_l_32";
  int64_t batch = 32;  // per GPU, per micro-step
  std::string precision = "fp32";
  // The weight-gradient GEMMs' output type, "fp32" or "bf16" (--weight-grads; "" in reports written before it was
  // recorded)
  std::string weight_grads;
  std::string hook = "allreduce";
  double bucket_mb = 25;
  double first_bucket_mb = 1;
  bool overlap = true;  // false with --no-overlap: buckets launch only after the whole backward pass
  int grad_accum = 1;
  int world = 1;
  bool ddp = true;  // false for the plain single-GPU run (no reducer at all)
  int workers = 8;  // loader worker threads
  // How the run was set up, as fields of their own ("" / 0 in reports written before they were recorded): the
  // communication backend ("nccl", "gloo", "mpi", "self"; "" without a communicator), --seed, --steps, --warmup,
  // and the data source (--data, or "npy" for --images/--labels).
  std::string backend;
  uint64_t seed = 0;
  int64_t steps = 0, warmup = 0;
  std::string data;
  // What made the run ("" / empty in reports written before they were recorded).
  std::string ddpx_version;               // "0.1"
  std::string ddpx_commit;                // "e933e79", "e933e79-dirty", "unknown"
  std::string started_utc;                // "2026-12-01T09:37:00Z"
  std::vector<std::string> command_line;  // argv of `ddpx train`; empty for runs started through run_training()
  OptimizerInfo optimizer;
  // The gradient buffer's tensors in buffer order; empty in reports written before it was recorded. On read:
  // positive numel, shape product == numel, offsets increasing without overlap.
  std::vector<GradientTensorInfo> gradient_tensors;
  // The training data's class names, label = index (train/data_classes.hpp); empty where it names none, and in
  // reports written before they were recorded.
  std::vector<std::string> classes;
  // The training data's fingerprint (samples, classes, a hash of its file list or headers; data/sample_source.hpp),
  // empty where the data has none; allow_data_change: --allow-data-change was given (a resume on other data).
  std::string data_fingerprint;
  bool allow_data_change = false;
  // torchvision's recipe parts ("" / 0 where not used, and in reports written before they were recorded): the
  // schedule as the start-up line states it (its warm-up method, --lr-step-unit), --repeated-augment, and the weight
  // average: --ema-decay as given and the decay used (--ema-adjust torchvision), --ema-every, --ema-copy-epochs.
  std::string lr_schedule, lr_warmup_method, lr_step_unit;
  int64_t repeated_augment = 0;
  double ema_decay = 0, ema_decay_used = 0;
  int64_t ema_every = 0, ema_copy_epochs = 0;
  std::string ema_adjust;
  // A torchvision command line (cli/torchvision_flags.hpp): its settings in effect, given or train.py's default
  // ("--batch-size" -> "512"), and the ddpx flags they became; false / empty otherwise and in older reports.
  bool torchvision = false;
  std::map<std::string, std::string> torchvision_settings;
  std::vector<std::string> torchvision_args;
  bool operator==(const RunConfig&) const = default;

  // batch * grad_accum * world: images consumed by one optimizer step across all ranks.
  int64_t images_per_step() const { return batch * grad_accum * world; }
  // The modes the text fields record, read back where the analysis and predict decide on them (each spelling,
  // as train writes it, compared here once): bf16 weight gradients (--weight-grads auto without a reader of
  // them), bf16 autocast.
  bool bf16_weight_grads() const { return weight_grads == "bf16"; }
  bool bf16_precision() const { return precision == "bf16"; }
};

struct RankRun {
  RankInfo info;
  std::vector<StepRecord> steps;  // measured steps only (warm-up excluded)
  std::vector<LossPoint> losses;  // this rank's loss at every logged step (warm-up included), steps increasing
  std::vector<CalibrationRecord> calibration;  // the calibration steps inside the warm-up; empty: none ran
  bool operator==(const RankRun&) const = default;
};

// Everything `ddpx report` needs: the configuration and every rank's measured steps.
struct RunReport {
  RunConfig config;
  std::vector<RankRun> ranks;  // ranks[k].info.rank == k
  std::optional<RunThroughput> throughput;  // rank 0's summary figures; absent in older reports
  std::optional<DdpCost> ddp_cost;          // DDP's cost as the run computed it (analysis/ddp_cost.hpp); absent
                                            // without --ddp or calibration steps, and in older reports
  std::vector<EvalPoint> evaluations;       // every --val evaluation in step order; empty without --val
  // Every attempt of the run, the last one this report's (which wrote it); empty in older reports. The steps,
  // losses and evaluations above are the last attempt's.
  std::vector<RunAttempt> attempts;
  bool operator==(const RunReport&) const = default;
};

// Last bucket completion minus first bucket launch; 0 without buckets.
double comm_window_ms(const std::vector<BucketRecord>& buckets);

// The buckets' communication intervals [start_ms, end_ms) (the hook running), on the step's clock.
std::vector<TimeInterval> comm_intervals(const std::vector<BucketRecord>& buckets);

// Communication the step waited for, as torchtitan's overlap analyzer defines it: the time in the union of the
// buckets' intervals that no compute interval covers (report/time_intervals.hpp), plus comm that ran serially
// outside the bucket timeline (e.g. an all-reduce the trainer timed separately).
double exposed_comm_ms(const std::vector<BucketRecord>& buckets, const std::vector<TimeInterval>& compute,
                       double serial_comm_ms = 0);
// The same with one compute interval, everything up to backward_end_ms (forward and backward run back to back
// from the step's start; backward_end_ms is an offset from it, like the bucket times).
double exposed_comm_ms(const std::vector<BucketRecord>& buckets, double backward_end_ms, double serial_comm_ms = 0);

// Sets step.phases.comm_ms and exposed_comm_ms from step.buckets with the two functions above.
void fill_comm_phases(StepRecord& step, double backward_end_ms, double serial_comm_ms = 0);

void to_json(nlohmann::json& j, const PhaseTimes& value);
void from_json(const nlohmann::json& j, PhaseTimes& value);
void to_json(nlohmann::json& j, const BucketRecord& value);
void from_json(const nlohmann::json& j, BucketRecord& value);
void to_json(nlohmann::json& j, const StepRecord& value);
void from_json(const nlohmann::json& j, StepRecord& value);
void to_json(nlohmann::json& j, const RankInfo& value);
void from_json(const nlohmann::json& j, RankInfo& value);
void to_json(nlohmann::json& j, const OptimizerInfo& value);
void from_json(const nlohmann::json& j, OptimizerInfo& value);
void to_json(nlohmann::json& j, const EvalPoint& value);
void from_json(const nlohmann::json& j, EvalPoint& value);
void to_json(nlohmann::json& j, const LossPoint& value);
void from_json(const nlohmann::json& j, LossPoint& value);
void to_json(nlohmann::json& j, const GradientTensorInfo& value);
void from_json(const nlohmann::json& j, GradientTensorInfo& value);
void to_json(nlohmann::json& j, const RunThroughput& value);
void from_json(const nlohmann::json& j, RunThroughput& value);
void to_json(nlohmann::json& j, const CalibrationRecord& value);
void from_json(const nlohmann::json& j, CalibrationRecord& value);
void to_json(nlohmann::json& j, const DdpCost& value);
void from_json(const nlohmann::json& j, DdpCost& value);
void to_json(nlohmann::json& j, const RunConfig& value);
void from_json(const nlohmann::json& j, RunConfig& value);
void to_json(nlohmann::json& j, const RankRun& value);
void from_json(const nlohmann::json& j, RankRun& value);
void to_json(nlohmann::json& j, const RunReport& value);
void from_json(const nlohmann::json& j, RunReport& value);

// Reads / writes a run report file. Errors (ddpx::Error) name the file and the field that is wrong; reading also
// checks that ranks are numbered 0..n-1 in order and that every rank has at least one step, in increasing step order.
RunReport load_run_report(const std::string& path);
// Steps/s of a run: report.throughput when recorded, else rank 0's measured steps over the sum of their times.
double report_steps_per_s(const RunReport& report);
void save_run_report(const RunReport& report, const std::string& path);

}  // namespace ddpx
