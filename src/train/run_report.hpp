// RunRecorder: turns the trainer's per-step measurements into report/ records (StepRecord, RunReport), and at the
// end of a run prints the step breakdown and the verdict on rank 0 and writes --report JSON and --trace JSON. The
// report also holds the training data's class names (config.classes) and every --val evaluation (evaluations).
// Guarantee: measuring never synchronizes the device in the hot path (the engine hands over times of completed
// steps only); warm-up steps are not recorded. Step times are on the run clock (report/step_record.hpp): the job
// measured this rank's clock offset to rank 0 when it opened (dist/job.hpp), the constructor moves the run clock's
// zero to rank 0's run start (a broadcast on every rank, before the first step), and every time recorded
// afterwards is on that clock. See Note [One clock for all ranks] (docs/design.md).
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "model/flat_layout.hpp"
#include "report/step_record.hpp"
#include "dist/job.hpp"
#include "train/reducer_port.hpp"
#include "train/evaluation.hpp"
#include "train/run_settings.hpp"
#include "train/train_options.hpp"

namespace ddpx {

class StepEngine;
struct EnginePhaseTimes;
struct TrainSummary;

class RunRecorder {
 public:
  // The report's config is the table's report rows (train/run_settings.hpp) plus the recorder's own fields: the
  // gradient tensors of the layout, the build and start stamps, and the per-rank resolved --workers and
  // --weight-grads (the setters below).
  // Collective: restarts the job's run clock at this run's start (DistJob::restart_run_clock).
  RunRecorder(const TrainOptions& options, DistJob& job, const FlatLayout& layout, const RunSettings& settings);
  void begin_step(int64_t step);
  void end_step(int64_t step, double data_wait_ms, double comm_wait_ms, double host_total_ms, StepEngine& engine,
                ReducerPort& reducer);
  // A calibration step (Note [Calibration steps], train/calibration.hpp): its own phase times (the engine's
  // completed_step_times()), the host's data wait and wall time, and the host time of its trailing reduction.
  // CPU: the plain step is the wall time without the reduction; CUDA: the device time without the compute
  // stream's wait for the reduction (between backward and optimizer), plus the data wait.
  void record_calibration(int64_t step, double data_wait_ms, double reduce_host_ms, double host_total_ms,
                          const EnginePhaseTimes& times, bool cuda_engine);
  // The loss of a logged step (the trainer reads it at progress lines only: on CUDA that synchronizes).
  void record_loss(int64_t step, double loss);
  // An evaluation on --val (the same on every rank; rank 0's goes into the report). average: the --ema-decay
  // weights'.
  void record_eval(int64_t step, std::optional<double> epoch, const EvalResult& result, bool average);
  // Prints the breakdown and verdict (when print is true) and writes the report/trace files.
  void finish(const TrainSummary& summary, bool print);

  const RankRun& rank_run() const { return run_; }  // what this rank recorded (tests read it)
  // "cpu" or the GPU's name (RankInfo::device_name; the verdict's advice depends on it).
  void set_device_name(std::string name) { run_.info.device_name = std::move(name); }
  void set_loader_workers(int workers) { config_.workers = workers; }  // what --workers resolved to
  // What --weight-grads resolved to (EngineOptions::bf16_weight_grads): config.weight_grads "bf16" or "fp32".
  void set_bf16_weight_grads(bool bf16) { config_.weight_grads = bf16 ? "bf16" : "fp32"; }
  // The run's attempts (train/run_settings.hpp: RunFacts::attempt_starts): recorded when the run reaches its end.
  void set_attempts(std::vector<RunAttempt> attempts) { attempts_ = std::move(attempts); }
  // Whether step `step`'s bucket timings are read (on CUDA that waits for the step's last bucket, so only at
  // progress lines; the CPU reads every step's). The trainer records ready times only at these steps.
  bool samples_buckets(int64_t step, bool cuda_engine) const {
    return with_reducer_ && (step % options_.log_every == 0 || !cuda_engine);
  }

 private:
  const TrainOptions& options_;
  DistJob& job_;
  const bool with_reducer_;  // the job is data-parallel: the run reduces through a Reducer (bucket timings)
  RunConfig config_;
  RankRun run_;
  std::vector<EvalPoint> evaluations_;
  std::vector<RunAttempt> attempts_;
  int64_t first_measured_step_;
  double previous_host_total_ms_ = 0;  // the host's time of the step recorded last (CUDA fills it in a step late)
  // A steady_clock time (ms) of this rank on the run clock: shifted onto rank 0's clock, from rank 0's run start.
  double run_clock_ms(double steady_ms) const;
  // CUDA: a step's phases, total and device start from its events (t.step's).
  void apply_device_times(StepRecord& record, const EnginePhaseTimes& t, double host_total_ms) const;
};

}  // namespace ddpx
