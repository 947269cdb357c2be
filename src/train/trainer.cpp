// The training loop; see trainer.hpp for the guarantees. run_training() reads as the run's table of contents: its
// set-up in order, the loop over steps (each run by the StepRunner, train/step_runner.hpp, then the progress line,
// the checkpoint and the evaluation that fall due), the summary.
#include "train/trainer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "core/byte_size.hpp"
#include "core/error.hpp"
#include "core/test_fault.hpp"
#include "data/batch_loader.hpp"
#include "data/data_sources.hpp"
#include "data/dataset.hpp"
#include "data/eval_transform_metadata.hpp"
#include "data/loader_affinity.hpp"
#include "data/loader_workers.hpp"
#include "io/checkpoint.hpp"
#include "io/directory_lock.hpp"
#include "io/output_file.hpp"
#include "io/param_safetensors.hpp"
#include "model/blas_threads.hpp"
#include "model/model_registry.hpp"
#include "train/nvtx.hpp"
#include "train/profile_window.hpp"
#include "train/calibration.hpp"
#include "train/checkpointing.hpp"
#include "train/data_classes.hpp"
#include "train/dist_setup.hpp"
#include "train/interrupt_notice.hpp"
#include "train/metrics_log.hpp"
#include "train/progress_line.hpp"
#include "train/reducer_port.hpp"
#include "train/run_evaluation.hpp"
#include "train/run_data.hpp"
#include "train/run_plan.hpp"
#include "train/run_report.hpp"
#include "train/step_engine.hpp"
#include "train/step_graphs.hpp"
#include "train/step_runner.hpp"

namespace ddpx {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Rank 0 prints. --quiet drops the progress (start-up, step, checkpoint, save and evaluation lines), never the
// results (summary, breakdown and verdict).
struct RunLog {
  bool lead = false;  // rank 0
  bool quiet = false;
  void operator()(const std::string& line) const {  // progress
    if (lead && !quiet) fmt::print("{}\n", line), std::fflush(stdout);
  }
  void result(const std::string& line) const {
    if (lead) fmt::print("{}\n", line), std::fflush(stdout);
  }
};

// Rank 0 writes the checkpoints: it proves the folder writable and takes it for this run before any work, so a
// bad --checkpoint-dir or a second run on the same folder fails now, not at the first checkpoint.
std::unique_ptr<DirectoryLock> lock_checkpoint_dir(const TrainOptions& options, int rank) {
  if (options.checkpoint_dir.empty() || rank != 0) return nullptr;
  probe_output_directory(options.checkpoint_dir, "--checkpoint-dir");
  return std::make_unique<DirectoryLock>(options.checkpoint_dir, "--checkpoint-dir");
}

std::unique_ptr<StepEngine> make_engine(const Model& model, const EngineOptions& options, const DistJob& job) {
  if (options.device == Device::cpu) return make_cpu_engine(model, options, job.local_world());
#ifdef DDPX_HAVE_CUDA
  return make_cuda_engine(model, options, job.cuda_device(), job.rank());
#else
  (void)job;
  fail("--device cuda: this ddpx was built without CUDA (nvcc was not found at configure time); use --device cpu");
#endif
}

// Initial parameters: --resume checkpoint (resume_from: --resume auto resolved), else --load weights (--reset-head:
// all but the head), else the model family's initialization from --seed.
struct StartState {
  std::vector<float> params;
  int64_t step = 0;  // optimizer steps already done
  std::optional<HostOptimizerState> optimizer;
  std::vector<std::string> head_reset;  // --reset-head: the head tensors left at their initialization, and why
  std::vector<int64_t> attempt_starts = {0};  // the run's attempts, this one last (RunFacts::attempt_starts)
};

StartState initial_state(const Model& model, const TrainOptions& options, const std::string& resume_from, int world) {
  const FlatLayout& layout = model.layout();
  StartState start;
  start.params.assign(layout.buffer_size(), 0.f);
  if (!resume_from.empty()) {
    LoadedCheckpoint ckpt = load_training_checkpoint(resume_from, layout, options, start.params.data(), world);
    start.step = ckpt.step;
    start.optimizer = std::move(ckpt.optimizer);
    start.attempt_starts = attempt_starts_after(std::move(ckpt.attempt_starts), ckpt.step);
    return start;
  }
  if (!options.load.empty() && options.reset_head) {
    model.init_params(start.params.data(), options.seed);
    start.head_reset = load_params_except_head(options.load, layout, start.params.data());
  } else if (!options.load.empty()) {
    load_params_safetensors(options.load, layout, start.params.data());
  } else {
    model.init_params(start.params.data(), options.seed);
  }
  return start;
}

// Where the engine starts: it holds the start state (rank 0's parameters on every rank, after the start-up
// agreement); `step` optimizer steps are already done.
struct Start {
  int64_t step = 0;
  std::vector<std::string> head_reset;
  RunSettings settings;  // the run's settings, agreed here and recorded in the report and checkpoints
  std::vector<int64_t> attempt_starts;
};

Start start_engine(const Model& model, const TrainOptions& options, const RunPlan& plan,
                   const std::string& resume_from, DistJob& job, StepEngine& engine) {
  StartState start = initial_state(model, options, resume_from, job.world());
  RunSettings settings = describe_run(options, model.layout(), start.step, job, start.attempt_starts);
  broadcast_initial_parameters(job, settings, model.layout(), start.params.data());
  engine.upload_params(start.params.data());
  if (start.optimizer) engine.upload_optimizer_state(*start.optimizer);
  DDPX_REQUIRE(start.step < plan.steps,
               "--resume {}: the checkpoint is at step {}, which is not below the run's length ({}); raise --steps",
               resume_from, start.step, plan.length_text);
  return {start.step, std::move(start.head_reset), std::move(settings), std::move(start.attempt_starts)};
}

BatchLoader::Options loader_options(const TrainOptions& options, const LoaderWorkerChoice& workers,
                                    const EngineOptions& engine_settings, StepEngine& engine, const RunLog& log) {
  BatchLoader::Options loader;
  loader.workers = workers.workers;
  // Each filling worker holds a slot: fewer slots than workers would leave workers idle.
  loader.depth = options.prefetch > 0 ? options.prefetch : workers.workers + 2;
  loader.pixel_batches = engine_settings.device_normalization;  // uint8 batches, normalized on the GPU
  loader.allocate = [&engine](size_t bytes) { return engine.allocate_host_batch(bytes); };
  loader.deallocate = [&engine](void* p) { engine.free_host_batch(p); };
  if (options.pin_loaders) {  // --pin-loaders: the cores hwloc says are near this rank's GPU
    const std::string gpu = engine.pci_bus_id();
    const LoaderCores cores = choose_loader_cores(allowed_cores(), gpu_local_cores(gpu), gpu);
    loader.cores = cores.cores;
    log(fmt::format("--pin-loaders: loader threads {}", cores.source));
  }
  return loader;
}

// --val: evaluated at the last step and every --eval-every (train/run_evaluation.hpp). Its labels must be classes
// of the model: a source that names more classes than the model has is refused now, before any step.
std::optional<RunEvaluator> make_evaluator(const TrainOptions& options, const RunPlan& plan, const Model& model,
                                           const Dataset* val_dataset) {
  if (!val_dataset) return std::nullopt;
  const std::vector<std::string> val_classes = val_dataset->class_names();
  DDPX_REQUIRE(val_classes.empty() || static_cast<int64_t>(val_classes.size()) == model.num_classes(),
               "--val {} has {} classes but --model {} has {}; give a validation set of the training classes (or "
               "a model with classes={})", options.val->text(), val_classes.size(), options.model,
               model.num_classes(), val_classes.size());
  return std::optional<RunEvaluator>(
      std::in_place, *val_dataset, plan.eval, plan.steps_per_epoch, plan.steps, model.input_shape().numel(),
      model.num_classes(), options.batch);
}

void log_start(const TrainOptions& options, const FlatLayout& layout, const StepEngine& engine,
               const EngineOptions& engine_settings, const Dataset& dataset, const LoaderWorkerChoice& workers,
               const DistJob& job, const ReducerPort& reducer, const std::string& resume_from, const Start& start,
               const RunLog& log) {
  log(fmt::format("ddpx train: {} on {} | {} parameters | batch {} x {} rank(s){} | {} | {} {}{}", layout.spec(),
                  engine.describe(), layout.num_params(), options.batch, job.world(),
                  options.grad_accum > 1 ? fmt::format(" x {} accumulation", options.grad_accum) : "",
                  fmt::format("{}, {} loader thread{}{}", dataset.describe(), workers.workers,
                              workers.workers == 1 ? "" : "s",
                              options.workers > 0 ? "" : fmt::format(" ({})", workers.source)),
                  options.optimizer.name(), engine_settings.bf16_weight_grads ? "| bf16 weight gradients " : "",
                  reducer.describe().empty() ? "" : fmt::format("| DDP: {}", reducer.describe())));
  if (start.step > 0) log(fmt::format("resumed from {} at step {}", resume_from, start.step));
  if (resume_mode(options.resume) == ResumeMode::newest && resume_from.empty())
    log(fmt::format("--resume auto: no checkpoint in {} yet; starting at step 0", options.checkpoint_dir));
  for (const std::string& line : start.head_reset) log(fmt::format("--reset-head: {}", line));
  if (options.optimizer.schedule.varies() || options.recipe.any())
    log(fmt::format("recipe: lr {} {}{}", options.optimizer.lr, options.optimizer.schedule.describe(),
                    options.recipe.any() ? " | " + options.recipe.describe() : ""));
}

// Which steps run as CUDA graphs and which calibrate (Note [Calibration steps], train/calibration.hpp: the CUDA
// engine hands phase times over one step late; the graph captures come first, then the calibration steps).
struct StepSchedule {
  StepGraphs graphs;
  CalibrationSchedule calibration;
};

StepSchedule plan_step_schedule(const TrainOptions& options, StepEngine& engine, const ReducerPort& reducer,
                                bool with_reducer, int64_t start_step, const RunLog& log) {
  CalibrationRequest request;
  request.steps = options.calibrate_steps;
  request.warmup = options.warmup_steps;
  request.start_step = start_step;
  request.with_reducer = with_reducer;
  request.phase_time_lag = engine.is_cuda() ? 1 : 0;
  StepGraphs graphs(step_graph_options(options), engine.graph_capture(), start_step, reducer.capturable_from_step(),
                    /*timed_variants=*/with_reducer, calibration_reserve(request));
  if (graphs.enabled) request.earliest_step = graphs.first_step + graphs.captures;
  const CalibrationSchedule calibration = plan_calibration(request);
  if (graphs.enabled)
    log(fmt::format("CUDA graph: the whole step is captured at step {} and replayed after", graphs.first_step));
  const int64_t count = calibration.count();
  if (count > 0)
    log(fmt::format("calibration: step{} {} run{} without the reducer during backward (DDP's cost is measured "
                    "against {}; the weights are the same)",
                    count == 1 ? "" : "s",
                    count == 1 ? std::to_string(calibration.first_step)
                               : fmt::format("{}-{}", calibration.first_step, calibration.last_step),
                    count == 1 ? "s" : "", count == 1 ? "it" : "them"));
  if (!calibration.shortfall.empty()) log("calibration: " + calibration.shortfall);
  return {std::move(graphs), calibration};
}

// The run's clocks: the whole run, the measured steps after the warm-up (their data wait too) and the interval
// since the last progress line; and the losses the summary reports.
class Progress {
 public:
  Progress(const TrainOptions& options, const RunPlan& plan, int64_t start_step, int world)
      : options_(options), plan_(plan), start_step_(start_step), world_(world) {
    summary_.world_size = world;
  }
  // The measured steps start after the warm-up, with the device idle.
  void begin_step(int64_t step, StepEngine& engine) {
    if (step != start_step_ + 1 + options_.warmup_steps) return;
    engine.synchronize();
    measure_start_ = Clock::now();
    measured_wait_s_ = 0;
  }
  void end_step(int64_t step, double data_wait_ms) {
    if (step > start_step_ + options_.warmup_steps) ++measured_steps_, measured_wait_s_ += data_wait_ms / 1e3;
    ++interval_steps_;
    interval_wait_ms_ += data_wait_ms;
  }
  bool logs(int64_t step) const {
    return step % options_.log_every == 0 || step == plan_.steps || step == start_step_ + 1;
  }
  // The progress point of a logged step, whose loss the caller read: the pace since the last one.
  ProgressPoint point(int64_t step, float loss, double lr) {
    if (step == start_step_ + 1) summary_.first_loss = loss;
    summary_.final_loss = loss;
    const double rate = interval_steps_ / std::max(seconds_since(interval_start_), 1e-9);
    const double wait_ms = interval_wait_ms_ / std::max<int64_t>(interval_steps_, 1);
    interval_start_ = Clock::now();
    interval_steps_ = 0;
    interval_wait_ms_ = 0;
    return {.step = step,
            .total_steps = plan_.steps,
            .start_step = start_step_,
            .loss = loss,
            .lr = lr,
            .steps_per_s = rate,
            .images_per_step = static_cast<double>(options_.batch * options_.grad_accum * world_),
            .elapsed_s = seconds_since(run_start_),
            .data_wait_ms = wait_ms};
  }
  TrainSummary summary() {
    summary_.steps_run = plan_.steps - start_step_;
    summary_.seconds = seconds_since(run_start_);
    const double measured_seconds = seconds_since(measure_start_);
    all_warmup_ = measured_steps_ == 0;
    const int64_t measured = all_warmup_ ? summary_.steps_run : measured_steps_;  // else over everything
    summary_.steps_per_s = measured / std::max(measured_seconds, 1e-9);
    summary_.images_per_s = summary_.steps_per_s * options_.batch * options_.grad_accum * world_;
    summary_.data_wait_fraction = measured_wait_s_ / std::max(measured_seconds, 1e-9);
    return summary_;
  }
  bool all_warmup() const { return all_warmup_; }  // the run was shorter than the warm-up (after summary())

 private:
  const TrainOptions& options_;
  const RunPlan& plan_;
  const int64_t start_step_;
  const int world_;
  TrainSummary summary_;
  const Clock::time_point run_start_ = Clock::now();
  Clock::time_point measure_start_ = run_start_;
  int64_t measured_steps_ = 0;
  double measured_wait_s_ = 0;
  Clock::time_point interval_start_ = run_start_;
  int64_t interval_steps_ = 0;
  double interval_wait_ms_ = 0;
  bool all_warmup_ = false;
};

// Rank 0 says, if SIGINT or SIGTERM ends the run, where it stopped and how to continue (train/interrupt_notice.hpp).
// A worker of a multi-rank job knows only its own argv (not the launcher's), so it names no exact command.
std::unique_ptr<InterruptNotice> make_interrupt_notice(const TrainOptions& options, const RunPlan& plan,
                                                       const DistJob& job, int64_t start_step) {
  if (!job.lead()) return nullptr;
  const bool has_checkpoint_dir = !options.checkpoint_dir.empty();
  InterruptContext context{
      .total_steps = plan.steps,
      .checkpoint_dir = options.checkpoint_dir,
      .continue_command = job.world() > 1 ? "" : continue_command(options.command_line, !options.resume.empty(),
                                                                 has_checkpoint_dir),
      .has_resume = !options.resume.empty()};
  auto notice = std::make_unique<InterruptNotice>(std::move(context), start_step);
  if (has_checkpoint_dir && checkpoint_exists(options.checkpoint_dir))
    notice->checkpoint(read_checkpoint_info(options.checkpoint_dir).state.step);
  return notice;
}

// The parts of a run the loop's outputs read (set up by run_training).
struct RunParts {
  const TrainOptions& options;
  const RunPlan& plan;          // the run's length (train/run_plan.hpp)
  const RunSettings& settings;  // the table of the run's settings (train/run_settings.hpp)
  const FlatLayout& layout;
  DistJob& job;
  StepEngine& engine;
  const RunLog& log;
  MetricsLog* metrics;             // --metrics (rank 0), else null
  InterruptNotice* interrupt_notice;  // rank 0: what SIGINT/SIGTERM print, else null
  int64_t batches_per_epoch = 0;   // of one rank at this world size; 0: the source has no epochs
  const Dataset* training_data = nullptr;  // --save records its eval transform (data/eval_transform_metadata.hpp)
  // The fraction of the training set seen after `step` steps, for --metrics; nullopt without epochs.
  std::optional<double> epoch_at(int64_t step) const {
    const int64_t steps_per_epoch = batches_per_epoch / options.grad_accum;
    return steps_per_epoch > 0 ? std::optional<double>(static_cast<double>(step) / steps_per_epoch) : std::nullopt;
  }
};

// Numerics are checked every step by the engine; this reads the result (free on the CPU, a synchronization on
// CUDA, so there it runs only where the host synchronizes anyway: progress lines, checkpoints, the end).
void require_good_numerics(const RunParts& run) {
  if (const std::optional<NumericsProblem> problem = run.engine.numerics_problem())
    fail("{}", describe(*problem, run.layout, run.options.divergence_ratio, run.job.rank()));
}

// --save: the weights, and under --ema-decay their average beside them (W.ema.safetensors).
void save_weights(const RunParts& run, int64_t step) {
  const TrainOptions& options = run.options;
  std::vector<float> params(run.layout.buffer_size());
  run.engine.download_params(params.data());
  TensorMetadata metadata = weights_metadata(run.layout, step, options.class_names);
  // The transform --val would apply, so `ddpx eval --weights` evaluates any data as this run did.
  if (options.data.is_image_source() && run.training_data != nullptr)
    metadata.merge(eval_transform_metadata(options.image_pipeline, options.data,
                                           run.training_data->center_crop_fraction()));
  save_params_safetensors(options.save, run.layout, params.data(), metadata, "--save");
  if (const std::optional<std::vector<float>> average = run.engine.weight_average()) {
    TensorMetadata average_metadata = metadata;
    average_metadata["ddpx.ema_decay"] = fmt::format("{}", options.recipe.ema_decay);
    save_params_safetensors(weight_average_path(options.save), run.layout, average->data(), average_metadata,
                            "--save (--ema-decay)");
  }
}

void log_progress(const RunParts& run, Progress& progress, RunRecorder& recorder, int64_t step) {
  const float loss = run.engine.last_loss();  // synchronizes on CUDA
  require_good_numerics(run);
  recorder.record_loss(step, loss);
  const ProgressPoint point = progress.point(step, loss, run.options.optimizer.lr_at(step));
  const std::optional<float> grad_norm = run.engine.last_grad_norm();  // --clip-grad-norm
  run.log(progress_line(point) + (grad_norm ? fmt::format(" | grad norm {:.3f}", *grad_norm) : ""));
  if (run.metrics)
    run.metrics->step(step, run.epoch_at(step), point.lr, loss,
                      grad_norm ? std::optional<double>(*grad_norm) : std::nullopt,
                      point.steps_per_s * point.images_per_step, 1e3 / std::max(point.steps_per_s, 1e-9),
                      point.data_wait_ms);
}

// Note [Deferred checkpoint commit]
// The loss of the weights a step k produced is known only at step k+1's forward, so a finite blow-up at a
// checkpoint step (loss 2.6e9 one step later) used to replace the last good checkpoint while the numerics error
// said "the last checkpoint, if any, is the last good one". A checkpoint is now written in full at step k
// (io/checkpoint.hpp: PendingCheckpoint, under no name yet) and committed only once step k+1's loss and gradients
// passed the numerics check; if that check fails the pending file is dropped and the message is true. The last
// step's checkpoint is committed at once: there is no later step, and the run ends with that state either way.
class Checkpoints {
 public:
  explicit Checkpoints(const RunParts& run) : run_(run) {}
  // After step `step`: the previous step's checkpoint is committed, then this step's is written when due.
  void after_step(int64_t step) {
    // This step's loss was computed from the pending checkpoint's weights.
    if (pending_) {
      (void)run_.engine.last_loss();  // synchronizes on CUDA, so the numerics read below include this step
      require_good_numerics(run_);
      commit();
    }
    const TrainOptions& options = run_.options;
    const bool last = step == run_.plan.steps;
    const bool due = !options.checkpoint_dir.empty() &&
                     ((options.checkpoint_every > 0 && step % options.checkpoint_every == 0) ||
                      (options.checkpoint_every_epoch && run_.plan.steps_per_epoch > 0 &&
                       step % run_.plan.steps_per_epoch == 0) ||
                      last);
    if (!due) return;
    require_good_numerics(run_);  // every rank: a bad step stops all of them here, together
    if (run_.job.lead()) prepare(step, last);
  }

 private:
  void prepare(int64_t step, bool last) {
    const TrainOptions& options = run_.options;
    std::vector<float> params(run_.layout.buffer_size());
    run_.engine.download_params(params.data());
    try {
      pending_ = prepare_training_checkpoint(
          options.checkpoint_dir, run_.layout, params.data(), options, run_.settings,
          run_.engine.download_optimizer_state(), step,
          DataPosition{step * options.grad_accum, run_.batches_per_epoch, run_.job.world()});
      if (last) commit();  // no later step to check it: the run ends with this state anyway
    } catch (const Error& checkpoint_error) {
      // The checkpoint and --save are independent outputs: a failing checkpoint must not lose the weights.
      if (options.save.empty()) throw;
      try {
        save_weights(run_, step);
      } catch (const Error& save_error) {
        fail("{}\n--save failed as well: {}", checkpoint_error.what(), save_error.what());
      }
      fail("{}\n--save {} holds the weights of step {}, where the run stopped", checkpoint_error.what(),
           options.save, step);
    }
  }
  void commit() {
    const int64_t step = pending_->step();
    pending_->commit();
    pending_.reset();
    if (run_.interrupt_notice) run_.interrupt_notice->checkpoint(step);
    if (step % (run_.options.log_every * 10) == 0 || step == run_.plan.steps)
      run_.log(fmt::format("checkpoint: {} (step {})", run_.options.checkpoint_dir, step));
  }

  const RunParts& run_;
  std::optional<PendingCheckpoint> pending_;
};

// The last evaluation of the weights (not their average), for the accuracy line after the summary.
struct LastEvaluation {
  std::optional<EvalResult> result;
  int64_t step = 0;
};

// Every rank evaluates its shard of --val (the totals are all-gathered): the same result on every rank.
void evaluate(const RunParts& run, const RunEvaluator& evaluator, RunRecorder& recorder, int64_t step,
              LastEvaluation& last) {
  require_good_numerics(run);
  for (const bool average : {false, true}) {
    if (average && run.options.recipe.ema_decay == 0) continue;  // no average to evaluate
    const EvalResult result =
        evaluator.evaluate(run.engine, average, &run.job.communicator(), run.job.rank(), run.job.world());
    run.log(fmt::format("eval   {:>6}/{} | {}{}", step, run.plan.steps, result.describe(), average ? " (EMA)" : ""));
    if (run.metrics) run.metrics->eval(step, run.epoch_at(step), result, average ? "ema" : "model");
    recorder.record_eval(step, run.epoch_at(step), result, average);
    if (!average) last = {result, step};
  }
}

TrainSummary finish_run(const RunParts& run, Progress& progress, ProfileWindow& profile_window,
                        RunRecorder& recorder, const LastEvaluation& last_eval) {
  const TrainOptions& options = run.options;
  run.engine.synchronize();
  require_good_numerics(run);
  profile_window.finish();
  const TrainSummary summary = progress.summary();
  if (!options.save.empty() && run.job.lead()) {
    run.log(fmt::format("saving weights to {} ({})", options.save,
                        byte_size(static_cast<double>(run.layout.num_params()) * 4)));
    save_weights(run, run.plan.steps);
    run.log(fmt::format("saved weights: {}", options.save));
  }
  // Two throughputs are printed: this one by the wall clock (progress lines, evaluations and checkpoints included),
  // the breakdown's from the median step; each says which it is.
  run.log.result(fmt::format("summary: {} steps in {:.2f} s | {:.2f} steps/s, {:.1f} images/s by the wall clock ({}) | "
                             "loss {:.4f} -> {:.4f} | data wait {:.1f}% of the step",
                             summary.steps_run, summary.seconds, summary.steps_per_s, summary.images_per_s,
                             progress.all_warmup()
                                 ? fmt::format("over all steps: none ran past --warmup {}", options.warmup_steps)
                                 : fmt::format("after {} warm-up steps", options.warmup_steps),
                             summary.first_loss, summary.final_loss, summary.data_wait_fraction * 100));
  if (run.engine.is_cuda())
    run.log.result(fmt::format("peak device memory {:.2f} GiB (allocations after context creation, cudaMemGetInfo)",
                               run.engine.device_memory_gib()));
  recorder.finish(summary, run.log.lead);
  if (run.metrics) run.metrics->end(run.plan.steps, "finished");
  if (last_eval.result)
    run.log(fmt::format("accuracy: {} at step {} on --val {}", last_eval.result->describe(), last_eval.step,
                        options.val->text()));
  return summary;
}

// The run's plan at `world` and the options it sets, their length checked (validate_length()).
struct PlannedRun {
  RunPlan plan;
  TrainOptions options;
};

PlannedRun planned_run(const TrainOptions& with_classes, const Dataset& train, int world) {
  RunPlan plan = plan_run(with_classes, epoch_batches(with_classes, train, world), world);
  TrainOptions options = with_plan(with_classes, plan);
  options.validate_length();
  return {std::move(plan), std::move(options)};
}

}  // namespace

TrainSummary run_training(const TrainOptions& requested) {
  (void)make_model_from_flag("--model", requested.model);  // a spec the registry refuses, named by its flag first
  // Note [The job opens before the plan]: what needs no world is done before the job opens, so that a mistyped flag
  // or a missing file never waits for a rendezvous: --data and --val, each opened once (train/run_data.hpp); the
  // data's class names (and count, where --model gives none); the model; the flags (validate_flags(), which names a
  // missing --images file before the .npy reader would); the plan's checks that read no world (check_plan_flags():
  // --epochs or --lr-step-unit epoch on endless data, the warm-up's flags against each other, --ema-adjust
  // torchvision without --epochs, ...); the datasets, made once from the opened data. A run whose plan counts
  // nothing in epochs (--steps N: plan_needs_epochs() false) is planned, and its length checked (validate_length():
  // --lr-warmup-steps, --report against --steps), here too: its plan is the same at every world. Then the job opens
  // (collective). A plan counted in epochs is made at its world (an epoch is the batches each of the job's ranks
  // runs): the length and what follows from it (the schedule's horizon and warm-up, --val's cadence), resolved once,
  // then validate_length(). An error from here on (such a plan's: an epoch of less than one --grad-accum step, a
  // warm-up in epochs not shorter than the run; a rank's own) ends this rank with its message; the launcher (ddpx's,
  // torchrun, mpirun) then stops the others, and a rank still waiting in a collective is bounded by the job's
  // watchdog (--comm-timeout).
  const RunData data = open_run_data(requested);
  const TrainOptions with_classes = with_data_classes(requested, data);
  const std::unique_ptr<Model> model = make_run_model(with_classes);
  with_classes.validate_flags();
  check_plan_flags(with_classes);
  const RunDatasets datasets = make_run_datasets(data, with_classes, *model);
  const FlatLayout& layout = model->layout();
  const DistOptions dist_settings = dist_options(with_classes);  // nothing the plan sets
  // A plan that counts nothing in epochs (--steps N) is the same at every world: made, and its length checked, now.
  std::optional<PlannedRun> planned_before_job;
  if (!plan_needs_epochs(with_classes)) planned_before_job = planned_run(with_classes, *datasets.train, /*world=*/1);
  DistJob job(dist_job_options(dist_settings));
  test_fault_point("plan");  // a test hook (core/test_fault.hpp): a rank failing after the job opened
  const PlannedRun planned = planned_before_job ? std::move(*planned_before_job)
                                                : planned_run(with_classes, *datasets.train, job.world());
  const RunPlan& plan = planned.plan;
  const TrainOptions& options = planned.options;
  const RunLog log{.lead = job.lead(), .quiet = options.quiet};
  const std::unique_ptr<DirectoryLock> checkpoint_lock = lock_checkpoint_dir(options, job.rank());
  if (options.model_classes && !options.load.empty() && !options.reset_head)
    log(fmt::format("--load {}: the file's classifier head has {} classes, so --model {} trains as {}", options.load,
                    model->num_classes(), requested.model, trained_model_spec(options)));
  // A data-parallel job means a reducer (attach_reducer below), which reads fp32 gradients unless its hook reads
  // nothing at this world size (the allreduce hook at one rank). The engine's options say once whether its weight
  // gradients are bf16; the start-up line and the run report repeat what they say.
  const bool with_reducer = job.data_parallel();  // reduce or not: decided once, by the job
  const EngineOptions engine_settings =
      engine_options(options, reducer_reads_gradients(options, with_reducer, job.world()));
  const std::string resume_from = resume_checkpoint(options);  // --resume auto: the newest checkpoint, if any
  // A requeued or restarted job whose run had already finished: nothing to do, and that is success.
  if (resume_mode(options.resume) == ResumeMode::newest && !resume_from.empty()) {
    const int64_t done = read_checkpoint_info(resume_from).state.step;
    if (done >= plan.steps) {
      log.result(fmt::format("--resume auto: the run is complete: {} holds step {}, the end of the run ({}); nothing "
                             "to train (raise --steps to train further)", options.checkpoint_dir, done,
                             plan.length_text));
      return TrainSummary{.world_size = job.world()};
    }
  }
  // A large model takes seconds to place and initialize (vit_h_14: 632 M parameters): say so before, not after.
  log(fmt::format("ddpx train: preparing {} ({} parameters, {} of fp32 weights){}", layout.spec(),
                  layout.num_params(), byte_size(static_cast<double>(layout.num_params()) * 4),
                  resume_from.empty() ? "" : "; reading the checkpoint"));
  const std::unique_ptr<StepEngine> engine = make_engine(*model, engine_settings, job);
  const Start start = start_engine(*model, options, plan, resume_from, job, *engine);
  // Whether the updates overlap backward is asked once; the reducer's after-reduce (or the port without one) and
  // the runner follow that answer (Note [Optimizer overlapped with backward]).
  const bool overlap_updates = updates_overlap_backward(options, with_reducer);
  const std::unique_ptr<ReducerPort> reducer = attach_reducer(job, dist_settings, layout, *engine, overlap_updates);
  const std::unique_ptr<Dataset>& dataset = datasets.train;
  const int64_t batches_per_epoch = dataset->batches_per_epoch(job.world(), options.batch);
  const std::optional<RunEvaluator> evaluator = make_evaluator(options, plan, *model, datasets.val.get());
  const LoaderWorkerChoice workers =
      choose_loader_workers(options.workers, options.device == Device::cuda, usable_cpu_count(), job.local_world());
  BatchLoader loader(*dataset, job.rank(), job.world(), options.batch, start.step * options.grad_accum,
                     loader_options(options, workers, engine_settings, *engine, log));
  log_start(options, layout, *engine, engine_settings, *dataset, workers, job, *reducer, resume_from, start, log);
  // --metrics: rank 0 writes it; a resumed run appends to it.
  const std::unique_ptr<MetricsLog> metrics = options.metrics.empty() || !job.lead()
                                                  ? nullptr
                                                  : std::make_unique<MetricsLog>(options.metrics, start.step);
  if (metrics) metrics->run(start.step, layout.spec(), options.data.text(), options.class_names);
  RunRecorder recorder(options, job, layout, start.settings);
  recorder.set_device_name(engine->device_name());
  recorder.set_loader_workers(workers.workers);
  recorder.set_bf16_weight_grads(engine_settings.bf16_weight_grads);
  recorder.set_attempts(run_attempts(start.attempt_starts, plan.steps));
  StepSchedule schedule = plan_step_schedule(options, *engine, *reducer, with_reducer, start.step, log);
  ProfileWindow profile_window = options.profile_steps.empty()
                                     ? ProfileWindow()
                                     : ProfileWindow(parse_profile_steps(options.profile_steps));
  StepRunner runner(*engine, loader, *reducer, schedule.graphs, schedule.calibration, options.grad_accum,
                    overlap_updates);
  const std::unique_ptr<InterruptNotice> interrupt_notice = make_interrupt_notice(options, plan, job, start.step);
  const RunParts run{options, plan,          start.settings, layout, job, *engine, log, metrics.get(),
                     interrupt_notice.get(), batches_per_epoch, dataset.get()};
  Progress progress(options, plan, start.step, job.world());
  Checkpoints checkpoints(run);
  LastEvaluation last_eval;
  const AbortCommunicatorOnError abort_on_error(job);  // declared after everything the loop uses: see its Note

  for (int64_t step = start.step + 1; step <= plan.steps; ++step) {
    progress.begin_step(step, *engine);
    profile_window.on_step_begin(step);
    NvtxRange batch_range(fmt::format("Batch {}", step));
    recorder.begin_step(step);
    const auto step_start = Clock::now();
    const StepOutcome outcome = runner.run(step, recorder.samples_buckets(step, engine->is_cuda()));
    if (!engine->is_cuda()) require_good_numerics(run);
    if (outcome.calibration)
      recorder.record_calibration(step, outcome.data_wait_ms, outcome.calibration_reduce_ms,
                                  outcome.captured ? 0.0 : seconds_since(step_start) * 1e3,
                                  engine->completed_step_times(), engine->is_cuda());
    profile_window.on_step_end(step);
    recorder.end_step(step, outcome.data_wait_ms, outcome.comm_wait_ms, seconds_since(step_start) * 1e3, *engine,
                      *reducer);
    progress.end_step(step, outcome.data_wait_ms);
    if (progress.logs(step)) log_progress(run, progress, recorder, step);
    checkpoints.after_step(step);  // Note [Deferred checkpoint commit]
    if (interrupt_notice) interrupt_notice->reached(step);
    if (evaluator && evaluator->due(step)) evaluate(run, *evaluator, recorder, step, last_eval);
  }
  return finish_run(run, progress, profile_window, recorder, last_eval);
}

}  // namespace ddpx
