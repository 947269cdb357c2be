// The training loop; see trainer.hpp for the guarantees.
#include "train/trainer.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "core/error.hpp"
#include "data/batch_loader.hpp"
#include "ddp/reducer.hpp"
#include "data/data_sources.hpp"
#include "data/dataset.hpp"
#include "data/loader_affinity.hpp"
#include "data/loader_workers.hpp"
#include "io/directory_lock.hpp"
#include "io/output_file.hpp"
#include "model/blas_threads.hpp"
#include "io/param_safetensors.hpp"
#include "train/calibration.hpp"
#include "io/checkpoint.hpp"
#include "train/checkpointing.hpp"
#include "train/data_classes.hpp"
#include "model/model_registry.hpp"
#include "train/dist_setup.hpp"
#include "train/metrics_log.hpp"
#include "train/run_evaluation.hpp"
#include "dist/bootstrap.hpp"
#include "train/progress_line.hpp"
#include "train/run_report.hpp"
#include "train/step_engine.hpp"
#include "train/step_graphs.hpp"
#include "profile/nvtx.hpp"
#include "profile/profile_window.hpp"

namespace ddpx {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::unique_ptr<StepEngine> make_engine(const Model& model, const EngineOptions& options, int cuda_device,
                                        int rank, int local_world) {
  if (options.device == Device::cpu) return make_cpu_engine(model, options, local_world);
#ifdef DDPX_HAVE_CUDA
  return make_cuda_engine(model, options, cuda_device, rank);
#else
  (void)cuda_device, (void)rank;
  fail("--device cuda: this ddpx was built without CUDA (nvcc was not found at configure time); use --device cpu");
#endif
}

// Initial parameters: --resume checkpoint, else --load weights, else the model family's initialization from --seed.
struct StartState {
  std::vector<float> params;
  int64_t step = 0;  // optimizer steps already done
  std::optional<HostOptimizerState> optimizer;
  std::vector<std::string> head_reset;  // --reset-head: the head tensors left at their initialization, and why
};

DatasetContext data_context(const TrainOptions& options, const Model& model) {
  DatasetContext context;
  context.shape = DataShape{model.input_shape().channels, model.input_shape().image_size, model.num_classes()};
  context.seed = options.seed;
  context.images = options.image_pipeline;
  return context;
}

// --epochs N as --steps: N x the batches every rank runs per epoch at this world size (Note [Epochs and the
// sampler]), over --grad-accum micro-batches per step. The dataset is opened here to count its samples.
TrainOptions with_epochs_as_steps(const TrainOptions& requested) {
  TrainOptions options = requested;
  if (requested.epochs <= 0) return options;
  DDPX_REQUIRE(requested.data.has_epochs(),
               "--epochs {} needs data with epochs (--images/--labels, idx:, folder:, pack:, wds:); --data {} is "
               "endless: give --steps", requested.epochs, requested.data.text());
  const std::unique_ptr<Model> model = make_model(requested.model);
  const std::unique_ptr<Dataset> dataset = make_dataset(requested.data, data_context(requested, *model));
  const int64_t micro_batches = requested.epochs * dataset->batches_per_epoch(detect_world().world_size, requested.batch);
  options.steps = micro_batches / std::max<int64_t>(requested.grad_accum, 1);
  DDPX_REQUIRE(options.steps >= 1, "--epochs {}: {} micro-batches do not make one step of --grad-accum {}",
               requested.epochs, micro_batches, requested.grad_accum);
  return options;
}

StartState initial_state(const Model& model, const TrainOptions& options, const std::string& resume_from) {
  const FlatLayout& layout = model.layout();
  StartState start;
  start.params.assign(layout.buffer_size(), 0.f);
  if (!resume_from.empty()) {
    LoadedCheckpoint ckpt = load_training_checkpoint(resume_from, layout, options, start.params.data());
    start.step = ckpt.step;
    start.optimizer = std::move(ckpt.optimizer);
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

}  // namespace

TrainSummary run_training(const TrainOptions& requested) {
  // The data's class names (and count, where --model gives none), then --epochs N as the steps of N epochs.
  const TrainOptions options = with_epochs_as_steps(with_data_classes(requested));
  options.validate();
  const std::unique_ptr<Model> model = make_model(options.model);
  const FlatLayout& layout = model->layout();
  const InputShape input = model->input_shape();
  DistContext dist = setup_distributed(dist_options(options));
  // Rank 0 prints. --quiet drops the progress (start-up, step, checkpoint and save lines), never the summary,
  // breakdown and verdict.
  const bool lead = dist.rank == 0;
  const bool progress = lead && !options.quiet;
  auto log = [&](const std::string& line) {
    if (progress) fmt::print("{}\n", line), std::fflush(stdout);
  };
  auto result = [&](const std::string& line) {
    if (lead) fmt::print("{}\n", line), std::fflush(stdout);
  };
  // Rank 0 writes the checkpoints: it proves the folder writable and takes it for this run before any work, so a
  // bad --checkpoint-dir or a second run on the same folder fails now, not at the first checkpoint.
  std::unique_ptr<DirectoryLock> checkpoint_lock;
  if (!options.checkpoint_dir.empty() && dist.rank == 0) {
    probe_output_directory(options.checkpoint_dir, "--checkpoint-dir");
    checkpoint_lock = std::make_unique<DirectoryLock>(options.checkpoint_dir, "--checkpoint-dir");
  }

  // A communicator means a reducer (attach_reducer below), which reads fp32 gradients unless its hook reads nothing
  // at this world size (the allreduce hook at one rank). The engine's options say once whether its weight
  // gradients are bf16; the start-up line and the run report repeat what they say.
  const EngineOptions engine_settings =
      engine_options(options, reducer_reads_gradients(options, dist.communicator != nullptr, dist.world));
  // A large model takes seconds to place and initialize (vit_h_14: 632 M parameters): say so before, not after.
  log(fmt::format("ddpx train: preparing {} ({} parameters, {:.1f} GB of fp32 weights){}", layout.spec(),
                  layout.num_params(), static_cast<double>(layout.num_params()) * 4 / 1e9,
                  resume_checkpoint(options).empty() ? "" : "; reading the checkpoint"));
  std::unique_ptr<StepEngine> engine =
      make_engine(*model, engine_settings, dist.cuda_device, dist.rank, dist.local_world);
  const std::string resume_from = resume_checkpoint(options);  // --resume auto: the newest checkpoint, if any
  StartState start = initial_state(*model, options, resume_from);
  if (dist.communicator) broadcast_initial_parameters(dist, options, layout, start.step, start.params.data());
  engine->upload_params(start.params.data());
  if (start.optimizer) engine->upload_optimizer_state(*start.optimizer);
  DDPX_REQUIRE(start.step < options.steps,
               "--resume {}: the checkpoint is at step {}, which is not below --steps {}; raise --steps",
               resume_from, start.step, options.steps);
  if (dist.communicator) attach_reducer(dist, dist_options(options), layout, *engine);

  std::unique_ptr<Dataset> dataset = make_dataset(options.data, data_context(options, *model));
  // --val is opened and checked against the training data now (files, labels, class names), before any step.
  const std::unique_ptr<Dataset> val_dataset =
      options.val ? make_val_dataset(*options.val, *dataset, options.data, data_context(options, *model)) : nullptr;
  const int64_t batches_per_epoch = dataset->batches_per_epoch(dist.world, options.batch);
  BatchLoader::Options loader_options;
  const LoaderWorkerChoice workers =
      choose_loader_workers(options.workers, options.device == Device::cuda, usable_cpu_count(), dist.local_world);
  loader_options.workers = workers.workers;
  // Each filling worker holds a slot: fewer slots than workers would leave workers idle.
  loader_options.depth = options.prefetch > 0 ? options.prefetch : workers.workers + 2;
  loader_options.pixel_batches = engine_settings.device_normalization;  // uint8 batches, normalized on the GPU
  loader_options.allocate = [&](size_t bytes) { return engine->allocate_host_batch(bytes); };
  loader_options.deallocate = [&](void* p) { engine->free_host_batch(p); };
  if (options.pin_loaders) {  // --pin-loaders: the cores hwloc says are near this rank's GPU
    const std::string gpu = engine->pci_bus_id();
    const LoaderCores cores = choose_loader_cores(allowed_cores(), gpu_local_cores(gpu), gpu);
    loader_options.cores = cores.cores;
    log(fmt::format("--pin-loaders: loader threads {}", cores.source));
  }
  const int64_t micro_per_step = options.grad_accum;
  BatchLoader loader(*dataset, dist.rank, dist.world, options.batch, start.step * micro_per_step, loader_options);
  // --val: evaluated at the last step, and every --eval-every (train/run_evaluation.hpp). Its labels must be classes
  // of the model: a source that names more classes than the model has is refused now, before any step.
  std::optional<RunEvaluator> evaluator;
  if (val_dataset) {
    const std::vector<std::string> val_classes = val_dataset->class_names();
    DDPX_REQUIRE(val_classes.empty() || static_cast<int64_t>(val_classes.size()) == model->num_classes(),
                 "--val {} has {} classes but --model {} has {}; give a validation set of the training classes (or "
                 "a model with classes={})", options.val->text(), val_classes.size(), options.model,
                 model->num_classes(), val_classes.size());
    evaluator.emplace(*val_dataset, options.eval_every.empty() ? EvalEvery{} : parse_eval_every(options.eval_every),
                      dataset->batches_per_epoch(dist.world, options.batch) / micro_per_step, options.steps,
                      model->input_shape().numel(), model->num_classes(), options.batch);
  }
  // --metrics: rank 0 writes it; a resumed run appends to it.
  std::unique_ptr<MetricsLog> metrics =
      options.metrics.empty() || dist.rank != 0 ? nullptr : std::make_unique<MetricsLog>(options.metrics, start.step > 0);
  if (metrics) metrics->run(start.step, layout.spec(), options.data.text(), options.class_names);
  const int64_t steps_per_epoch = dataset->batches_per_epoch(dist.world, options.batch) / micro_per_step;
  const auto epoch_at = [&](int64_t step) {
    return steps_per_epoch > 0 ? std::optional<double>(static_cast<double>(step) / steps_per_epoch) : std::nullopt;
  };
  std::optional<EvalResult> last_eval;
  int64_t last_eval_step = 0;

  log(fmt::format("ddpx train: {} on {} | {} parameters | batch {} x {} rank(s){} | {} | {} {}{}",
                  layout.spec(), engine->describe(), layout.num_params(), options.batch, dist.world,
                  micro_per_step > 1 ? fmt::format(" x {} accumulation", micro_per_step) : "",
                  fmt::format("{}, {} loader thread{}{}", dataset->describe(), workers.workers,
                              workers.workers == 1 ? "" : "s",
                              options.workers > 0 ? "" : fmt::format(" ({})", workers.source)),
                  options.optimizer.name(),
                  engine_settings.bf16_weight_grads ? "| bf16 weight gradients " : "",
                  dist.reducer ? fmt::format("| DDP: {}", dist.describe()) : ""));
  if (start.step > 0) log(fmt::format("resumed from {} at step {}", resume_from, start.step));
  if (options.resume == "auto" && resume_from.empty())
    log(fmt::format("--resume auto: no checkpoint in {} yet; starting at step 0", options.checkpoint_dir));
  for (const std::string& line : start.head_reset) log(fmt::format("--reset-head: {}", line));
  if (options.optimizer.schedule.varies() || options.recipe.any())
    log(fmt::format("recipe: lr {} {}{}", options.optimizer.lr, options.optimizer.schedule.describe(),
                    options.recipe.any() ? " | " + options.recipe.describe() : ""));

  RunRecorder recorder(options, dist, layout);
  recorder.set_device_name(engine->device_name());
  recorder.set_loader_workers(workers.workers);
  recorder.set_bf16_weight_grads(engine_settings.bf16_weight_grads);
  // Note [Calibration steps] (train/calibration.hpp): the CUDA engine hands phase times over one step late.
  CalibrationRequest calibration_request;
  calibration_request.steps = options.calibrate_steps;
  calibration_request.warmup = options.warmup_steps;
  calibration_request.start_step = start.step;
  calibration_request.with_reducer = dist.reducer != nullptr;
  calibration_request.phase_time_lag = engine->is_cuda() ? 1 : 0;
  StepGraphs graphs(step_graph_options(options), *engine, start.step,
                    dist.reducer ? dist.reducer->hook().capturable_from_step() : 0,
                    /*timed_variants=*/dist.reducer != nullptr, calibration_reserve(calibration_request));
  if (graphs.enabled) calibration_request.earliest_step = graphs.first_step + graphs.captures;
  const CalibrationSchedule calibration = plan_calibration(calibration_request);
  ProfileWindow profile_window = options.profile_steps.empty()
                                     ? ProfileWindow()
                                     : ProfileWindow(parse_profile_steps(options.profile_steps));
  const char* phase_name = "forward";
  if (graphs.enabled) log(fmt::format("CUDA graph: the whole step is captured at step {} and replayed after", graphs.first_step));
  if (calibration.count() > 0)
    log(fmt::format("calibration: step{} {} run{} without the reducer during backward (DDP's cost is measured "
                    "against {}; the weights are the same)",
                    calibration.count() == 1 ? "" : "s",
                    calibration.count() == 1 ? std::to_string(calibration.first_step)
                                             : fmt::format("{}-{}", calibration.first_step, calibration.last_step),
                    calibration.count() == 1 ? "s" : "", calibration.count() == 1 ? "it" : "them"));
  if (!calibration.shortfall.empty()) log("calibration: " + calibration.shortfall);
  // See Note [Optimizer overlapped with backward] (train/step_engine.hpp); the reducer's part is set up by
  // attach_reducer().
  const bool overlap_optimizer = updates_overlap_backward(options, dist.reducer != nullptr);
  auto finish_optimizer = [&](int64_t step) {
    if (overlap_optimizer) {
      engine->finish_span_updates();
    } else {
      engine->optimizer_step(step);
    }
  };
  TrainSummary summary;
  summary.world_size = dist.world;
  const auto run_start = Clock::now();
  Clock::time_point measure_start = run_start;
  int64_t measured_steps = 0;
  double measured_wait = 0;
  auto interval_start = Clock::now();
  int64_t interval_steps = 0;

  // Declared after everything the loop uses, so it runs first when an error unwinds from the loop: a rank that
  // fails while its own NCCL kernels wait for peers would otherwise block in the teardown that follows (pinned
  // frees and the engine synchronize the device) until its watchdog fires. Aborting the communicator releases
  // those kernels, the rank exits at once, and the launcher then stops the other workers. (MPI is left alone: its
  // abort would end the job before this rank prints its error; MpiSession skips MPI_Finalize while unwinding, so
  // the rank exits with its error and mpirun stops the others.)
  struct AbortCommunicatorOnError {
    DistContext& dist;
    const int exceptions = std::uncaught_exceptions();
    ~AbortCommunicatorOnError() {
      if (std::uncaught_exceptions() > exceptions && dist.communicator &&
          dist.communicator->buffer_memory() == BufferMemory::cuda)
        dist.communicator->abort("this rank is exiting on an error");
    }
  } abort_on_error{dist};

  // Numerics are checked every step by the engine; this reads the result (free on the CPU, a synchronization on
  // CUDA, so there it runs only where the host synchronizes anyway: progress lines, checkpoints, the end).
  const auto require_good_numerics = [&] {
    if (const std::optional<NumericsProblem> problem = engine->numerics_problem())
      fail("{}", describe(*problem, layout, options.divergence_ratio, dist.rank));
  };
  const auto save_weights = [&](int64_t step) {
    std::vector<float> params(layout.buffer_size());
    engine->download_params(params.data());
    const TensorMetadata metadata = weights_metadata(layout, step, options.class_names);
    save_params_safetensors(options.save, layout, params.data(), metadata, "--save");
    if (const std::optional<std::vector<float>> average = engine->weight_average()) {
      TensorMetadata average_metadata = metadata;
      average_metadata["ddpx.ema_decay"] = fmt::format("{}", options.recipe.ema_decay);
      save_params_safetensors(weight_average_path(options.save), layout, average->data(), average_metadata,
                              "--save (--ema-decay)");
    }
  };

  // Note [Deferred checkpoint commit]
  // The loss of the weights a step k produced is known only at step k+1's forward, so a finite blow-up at a
  // checkpoint step (loss 2.6e9 one step later) used to replace the last good checkpoint while the numerics error
  // said "the last checkpoint, if any, is the last good one". A checkpoint is now written in full at step k
  // (io/checkpoint.hpp: PendingCheckpoint, under no name yet) and committed only once step k+1's loss and gradients
  // passed the numerics check; if that check fails the pending file is dropped and the message is true. The last
  // step's checkpoint is committed at once: there is no later step, and the run ends with that state either way.
  std::optional<PendingCheckpoint> pending_checkpoint;
  const auto commit_checkpoint = [&] {
    const int64_t step = pending_checkpoint->step();
    pending_checkpoint->commit();
    pending_checkpoint.reset();
    if (step % (options.log_every * 10) == 0 || step == options.steps)
      log(fmt::format("checkpoint: {} (step {})", options.checkpoint_dir, step));
  };

  for (int64_t step = start.step + 1; step <= options.steps; ++step) {
    if (step == start.step + 1 + options.warmup_steps) {
      engine->synchronize();
      measure_start = Clock::now();
      measured_wait = 0;
    }
    profile_window.on_step_begin(step);
    NvtxRange batch_range(fmt::format("Batch {}", step));
    recorder.begin_step(step);
    const auto step_start = Clock::now();
    double data_wait_ms = 0;
    // The calls of one step after its batch is staged; captured once into a CUDA graph where that is exact.
    // NVTX ranges carry the seed's names ("forward", then "backward" from the first final gradient span on).
    // With the optimizer overlapped, a synchronized micro-batch updates each span once it is final (no reducer)
    // or reduced (the reducer's AfterReduce); see Note [Optimizer overlapped with backward].
    auto step_calls = [&](bool sync) {
      const bool span_updates = overlap_optimizer && sync;
      if (span_updates) engine->begin_span_updates(step);
      if (dist.reducer) dist.reducer_begin(sync, engine->compute_stream());
      std::optional<NvtxRange> phase_range(std::in_place, "forward");
      // Spans are marked in accumulation micro-batches too: the reducer checks them and communicates nothing.
      const bool reduce = dist.reducer != nullptr;
      engine->forward_backward(1.0f / static_cast<float>(micro_per_step), [&](size_t begin, size_t end) {
        if (phase_range && std::string_view(phase_name) == "forward") {
          phase_range.reset();
          phase_name = "backward";
          phase_range.emplace("backward");
        }
        if (reduce) {
          dist.reducer_mark_ready(begin, end);
        } else if (span_updates) {
          engine->optimizer_span(begin, end, nullptr);
        }
      });
      phase_range.reset();
      phase_name = "forward";
    };
    // The next batch, staged on the engine; the time spent waiting for it counts as data wait.
    auto acquire_batch = [&]() -> const HostBatch& {
      const auto wait_start = Clock::now();
      const HostBatch& batch = [&]() -> const HostBatch& {
        NvtxRange get_batch_range("get batch");
        return loader.acquire();
      }();
      data_wait_ms += seconds_since(wait_start) * 1e3;
      engine->set_batch(batch);
      return batch;
    };
    double comm_wait_ms = 0;
    // Bucket ready times cost the compute stream a node per bucket: recorded only where they are read.
    const bool sample_buckets = recorder.samples_buckets(step, engine->is_cuda());
    // See Note [Calibration steps]: the backward without the reducer, then every bucket reduced through it (same
    // hook, same synchronized step) with the optimizer once over the buffer: the same weights, the plain step's
    // path.
    const bool calibrating = calibration.contains(step);
    double calibration_reduce_ms = 0;
    bool captured = false;
    auto plain_forward_backward = [&] {
      engine->forward_backward(1.0f / static_cast<float>(micro_per_step), [](size_t, size_t) {});
    };
    auto reduce_after_backward = [&] {
      const auto reduce_start = Clock::now();
      dist.reducer->set_after_reduce(false);
      dist.reducer_begin(true, engine->compute_stream());
      dist.reducer_mark_ready(0, layout.buffer_size());
      dist.reducer_finish();
      dist.reducer->set_after_reduce(true);
      calibration_reduce_ms = seconds_since(reduce_start) * 1e3;
    };
    if (calibrating) {
      NvtxRange calibration_range("calibration step");
      dist.reducer->set_ready_timing(false);
      if (graphs.enabled && step >= graphs.first_step) {
        const HostBatch& batch = acquire_batch();
        captured = graphs.run(step, GraphVariant::calibration, [&] {
          engine->zero_grads();
          plain_forward_backward();
          reduce_after_backward();
          engine->optimizer_step(step);
        }, [&] { dist.reducer->before_replay(); }, [&](void* stream) { dist.reducer->after_replay(stream); });
        calibration_reduce_ms = 0;  // enqueued at capture; the replay's reduction is timed on the device
        engine->batch_consumed(batch);
        loader.release(batch);
      } else {
        engine->zero_grads();
        for (int64_t micro = 0; micro < micro_per_step; ++micro) {
          const HostBatch& batch = acquire_batch();
          plain_forward_backward();
          engine->batch_consumed(batch);
          loader.release(batch);
        }
        reduce_after_backward();
        engine->optimizer_step(step);
      }
    } else if (graphs.enabled && step >= graphs.first_step) {
      const HostBatch& batch = acquire_batch();
      const GraphVariant variant = graphs.variant_for(step, sample_buckets);
      if (dist.reducer) dist.reducer->set_ready_timing(variant == GraphVariant::timed);
      graphs.run(step, variant, [&] {
        engine->zero_grads();
        step_calls(true);
        if (dist.reducer) dist.reducer_finish();
        finish_optimizer(step);
      }, dist.reducer ? std::function<void()>([&] { dist.reducer->before_replay(); }) : std::function<void()>(),
         dist.reducer ? std::function<void(void*)>([&](void* stream) { dist.reducer->after_replay(stream); })
                      : std::function<void(void*)>());
      engine->batch_consumed(batch);
      loader.release(batch);
    } else {
      if (dist.reducer) dist.reducer->set_ready_timing(sample_buckets);
      engine->zero_grads();
      for (int64_t micro = 0; micro < micro_per_step; ++micro) {
        const HostBatch& batch = acquire_batch();
        const bool last_micro = micro + 1 == micro_per_step;
        step_calls(last_micro);
        // An accumulation micro-batch is a reducer step of its own that communicates nothing.
        if (dist.reducer && !last_micro) dist.reducer_finish();
        engine->batch_consumed(batch);
        loader.release(batch);
      }
      const auto comm_wait_start = Clock::now();
      if (dist.reducer) dist.reducer_finish();
      comm_wait_ms = seconds_since(comm_wait_start) * 1e3;
      NvtxRange optimizer_range("optimizer step");
      finish_optimizer(step);
    }
    if (!engine->is_cuda()) require_good_numerics();
    if (calibrating) {
      const double host_ms = seconds_since(step_start) * 1e3;
      recorder.record_calibration(step, data_wait_ms, calibration_reduce_ms, captured ? 0.0 : host_ms,
                                  engine->completed_step_times(), engine->is_cuda());
    }
    profile_window.on_step_end(step);
    recorder.end_step(step, data_wait_ms, comm_wait_ms, seconds_since(step_start) * 1e3, *engine, dist);
    if (step > start.step + options.warmup_steps) {
      ++measured_steps;
      measured_wait += data_wait_ms / 1e3;
    }

    ++interval_steps;
    const bool last = step == options.steps;
    if (step % options.log_every == 0 || last || step == start.step + 1) {
      const float loss = engine->last_loss();  // synchronizes on CUDA
      require_good_numerics();
      recorder.record_loss(step, loss);
      if (step == start.step + 1) summary.first_loss = loss;
      summary.final_loss = loss;
      const double elapsed = seconds_since(interval_start);
      const double rate = interval_steps / std::max(elapsed, 1e-9);
      const std::optional<float> grad_norm = engine->last_grad_norm();
      log(progress_line({.step = step,
                         .total_steps = options.steps,
                         .start_step = start.step,
                         .loss = loss,
                         .lr = options.optimizer.lr_at(step),
                         .steps_per_s = rate,
                         .images_per_step = static_cast<double>(options.batch * micro_per_step * dist.world),
                         .elapsed_s = seconds_since(run_start)}) +
          (grad_norm ? fmt::format(" | grad norm {:.3f}", *grad_norm) : ""));
      if (metrics)
        metrics->step(step, epoch_at(step), options.optimizer.lr_at(step), loss,
                      grad_norm ? std::optional<double>(*grad_norm) : std::nullopt,
                      rate * options.batch * micro_per_step * dist.world);
      interval_start = Clock::now();
      interval_steps = 0;
    }
    // See Note [Deferred checkpoint commit]: this step's loss was computed from the pending checkpoint's weights.
    if (pending_checkpoint) {
      (void)engine->last_loss();  // synchronizes on CUDA, so the numerics read below include this step
      require_good_numerics();
      commit_checkpoint();
    }
    const bool checkpoint_due =
        !options.checkpoint_dir.empty() &&
        ((options.checkpoint_every > 0 && step % options.checkpoint_every == 0) || last);
    if (checkpoint_due) require_good_numerics();  // every rank: a bad step stops all of them here, together
    if (checkpoint_due && dist.rank == 0) {
      std::vector<float> params(layout.buffer_size());
      engine->download_params(params.data());
      try {
        pending_checkpoint = prepare_training_checkpoint(options.checkpoint_dir, layout, params.data(), options,
                                                         engine->download_optimizer_state(), step,
                                                         DataPosition{step * micro_per_step, batches_per_epoch, dist.world});
        if (last) commit_checkpoint();  // no later step to check it: the run ends with this state anyway
      } catch (const Error& checkpoint_error) {
        // The checkpoint and --save are independent outputs: a failing checkpoint must not lose the weights.
        if (options.save.empty()) throw;
        try {
          save_weights(step);
        } catch (const Error& save_error) {
          fail("{}\n--save failed as well: {}", checkpoint_error.what(), save_error.what());
        }
        fail("{}\n--save {} holds the weights of step {}, where the run stopped", checkpoint_error.what(),
             options.save, step);
      }
    }
    // Every rank evaluates its shard of --val (the totals are all-gathered): the same result on every rank.
    if (evaluator && evaluator->due(step)) {
      require_good_numerics();
      for (const bool average : {false, true}) {
        if (average && !engine->weight_average()) continue;
        const EvalResult result = evaluator->evaluate(*engine, average, dist.communicator.get(), dist.rank,
                                                      dist.world);
        log(fmt::format("eval   {:>6}/{} | {}{}", step, options.steps, result.describe(), average ? " (EMA)" : ""));
        if (metrics) metrics->eval(step, epoch_at(step), result, average ? "ema" : "model");
        recorder.record_eval(step, epoch_at(step), result, average);
        if (!average) last_eval = result, last_eval_step = step;
      }
    }
  }
  engine->synchronize();
  require_good_numerics();
  profile_window.finish();
  summary.steps_run = options.steps - start.step;
  summary.seconds = seconds_since(run_start);
  const double measured_seconds = seconds_since(measure_start);
  const bool all_warmup = measured_steps == 0;
  if (all_warmup) measured_steps = summary.steps_run;  // run shorter than the warm-up: report over everything
  summary.steps_per_s = measured_steps / std::max(measured_seconds, 1e-9);
  summary.images_per_s = summary.steps_per_s * options.batch * micro_per_step * dist.world;
  summary.data_wait_fraction = measured_wait / std::max(measured_seconds, 1e-9);

  if (!options.save.empty() && dist.rank == 0) {
    log(fmt::format("saving weights to {} ({:.1f} GB)", options.save,
                    static_cast<double>(layout.num_params()) * 4 / 1e9));
    save_weights(options.steps);
    log(fmt::format("saved weights: {}", options.save));
  }
  result(fmt::format("summary: {} steps in {:.2f} s | {:.2f} steps/s, {:.1f} images/s ({}) | "
                  "loss {:.4f} -> {:.4f} | data wait {:.1f}% of the step",
                  summary.steps_run, summary.seconds, summary.steps_per_s, summary.images_per_s,
                  all_warmup ? fmt::format("over all steps: none ran past --warmup {}", options.warmup_steps)
                             : fmt::format("after {} warm-up steps", options.warmup_steps),
                  summary.first_loss, summary.final_loss, summary.data_wait_fraction * 100));
  if (engine->is_cuda())
    result(fmt::format("peak device memory {:.2f} GiB (allocations after context creation, cudaMemGetInfo)",
                    engine->device_memory_gib()));
  recorder.finish(summary, lead);
  if (last_eval)
    log(fmt::format("accuracy: {} at step {} on --val {}", last_eval->describe(), last_eval_step,
                    options.val->text()));
  return summary;
}

}  // namespace ddpx
