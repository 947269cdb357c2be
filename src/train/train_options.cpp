// Validation of TrainOptions; every message names the flag and the accepted range.
#include "train/train_options.hpp"
#include "train/run_evaluation.hpp"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "io/checkpoint.hpp"
#include "io/output_file.hpp"
#include "io/same_file.hpp"
#include "train/profile_window.hpp"

namespace ddpx {
namespace {

// An output file is checked before the run, not after hours of training (io/output_file.hpp's policy).
void require_writable_file(const std::string& path, const char* flag) {
  if (!path.empty()) (void)check_output_path(path, flag);
}

}  // namespace

void TrainOptions::require_distinct_paths() const {
  std::vector<FileRole> inputs, outputs;
  const auto add = [](std::vector<FileRole>& roles, const char* flag, const std::string& path) {
    if (!path.empty()) roles.push_back({flag, path});
  };
  add(inputs, "--load", load);
  add(inputs, "--images", images);
  add(inputs, "--labels", labels);
  // --resume D --checkpoint-dir D is the way to continue a run: the checkpoint is read in full before the first
  // one is written, so the resumed file only counts as an input against the other outputs.
  if (resume_mode(resume) == ResumeMode::checkpoint) add(inputs, "--resume", checkpoint_file(resume).string());
  for (const std::string& file : config_files) add(inputs, "--config", file);
  inputs.insert(inputs.end(), data_inputs.begin(), data_inputs.end());
  add(outputs, "--save", save);
  add(outputs, "--report", report);
  add(outputs, "--trace", trace);
  add(outputs, "--metrics", metrics);
  require_distinct_files(inputs, outputs);
  if (checkpoint_dir.empty()) return;
  // --resume D --checkpoint-dir D is how a run continues: the checkpoint is read in full before the first one is
  // written, so against the checkpoint folder's file the resumed checkpoint is not a clash.
  std::vector<FileRole> others;
  for (const FileRole& input : inputs)
    if (input.flag != "--resume") others.push_back(input);
  outputs.push_back({"--checkpoint-dir", checkpoint_file(checkpoint_dir)});
  require_distinct_files(others, outputs);
}

void TrainOptions::validate() const {
  validate_flags();
  validate_length();
}

void TrainOptions::validate_length() const {
  DDPX_REQUIRE(steps > 0, "--steps must be positive, got {}", steps);
  if (!profile_steps.empty())
    DDPX_REQUIRE(parse_profile_steps(profile_steps).last <= steps, "--profile-steps {}: the run has only --steps {}",
                 profile_steps, steps);
  DDPX_REQUIRE(report.empty() || steps > warmup_steps,
               "--report {} needs steps past the warm-up (only those are measured): --steps {} is not more than "
               "--warmup {}; raise --steps or lower --warmup", report, steps, warmup_steps);
}

void TrainOptions::validate_flags() const {
  // --device/--precision, --batch, --cpu-threads, the optimizer (its schedule's horizon is the plan's)
  engine_options(*this, /*reducer_reads_gradients=*/ddp).validate();
  // A run given in --steps has its length already (the plan's message; --epochs: the plan counts the steps).
  DDPX_REQUIRE(epochs != 0 || steps > 0, "--steps must be positive, got {}", steps);
  DDPX_REQUIRE(warmup_steps >= 0, "--warmup must be >= 0, got {}", warmup_steps);
  DDPX_REQUIRE(calibrate_steps >= 0 && calibrate_steps <= 1000000,
               "--calibrate-steps must be 0 (off) or a number of warm-up steps, got {}", calibrate_steps);
  DDPX_REQUIRE(workers >= 0 && workers <= 256, "--workers must be 0 (auto) or in [1, 256], got {}", workers);
  DDPX_REQUIRE(prefetch == 0 || (prefetch >= 2 && prefetch <= 258), "--prefetch must be 0 (auto) or in [2, 258], got {}",
               prefetch);
  DDPX_REQUIRE(keep_checkpoints >= 1 && keep_checkpoints <= 1000000,
               "--keep-checkpoints must be at least 1 (the newest checkpoint), got {}", keep_checkpoints);
  DDPX_REQUIRE(std::isfinite(divergence_ratio) && (divergence_ratio == 0 || divergence_ratio >= 1),
               "--divergence-ratio must be 0 (off) or at least 1, got {}", divergence_ratio);
  DDPX_REQUIRE(grad_accum >= 1, "--grad-accum must be >= 1, got {}", grad_accum);
  DDPX_REQUIRE(recipe.clip_grad_norm == 0 || optimizer_overlap != OverlapPolicy::on,
               "--clip-grad-norm {} with --optimizer-overlap on: clipping needs the whole step's gradient norm before "
               "any parameter is updated; use --optimizer-overlap auto or off", recipe.clip_grad_norm);
  // Bucket caps between 4 bytes (one fp32 gradient) and 1 TB; checked here, also without --ddp, so that a typo
  // never waits for the run that would use it (and the cast to bytes can never overflow).
  constexpr double kMinBucketMb = 4.0 / (1 << 20), kMaxBucketMb = 1e6;
  for (const auto& [flag, mb] : {std::pair{"--bucket-mb", bucket_mb}, {"--first-bucket-mb", first_bucket_mb}})
    DDPX_REQUIRE(std::isfinite(mb) && mb >= kMinBucketMb && mb <= kMaxBucketMb,
                 "{} must be between {:.2g} (4 bytes) and {:g} MB, got {}", flag, kMinBucketMb, kMaxBucketMb, mb);
  DDPX_REQUIRE(std::isfinite(comm_timeout_s) && comm_timeout_s >= 0.001 && comm_timeout_s <= 1e7,
               "--comm-timeout must be between 0.001 and 1e7 seconds, got {}", comm_timeout_s);
  if (!profile_steps.empty()) {
    (void)parse_profile_steps(profile_steps);  // the range against the run's length: validate_length()
    DDPX_REQUIRE(device == Device::cuda,
                 "--profile-steps {} needs --device cuda (it starts and stops the CUDA profiler for nsys "
                 "--capture-range=cudaProfilerApi)", profile_steps);
  }
  DDPX_REQUIRE(checkpoint_every >= 0, "--checkpoint-every must be >= 0, got {}", checkpoint_every);
  DDPX_REQUIRE(!checkpoint_every_epoch || !checkpoint_dir.empty(),
               "--checkpoint-every-epoch needs --checkpoint-dir DIR");
  DDPX_REQUIRE(checkpoint_every == 0 || !checkpoint_dir.empty(),
               "--checkpoint-every {} needs --checkpoint-dir DIR", checkpoint_every);
  DDPX_REQUIRE(log_every >= 1, "--log-every must be >= 1, got {}", log_every);
  require_writable_file(save, "--save");
  require_writable_file(report, "--report");
  require_writable_file(trace, "--trace");
  require_writable_file(metrics, "--metrics");
  DDPX_REQUIRE(eval_every.empty() || val,
               "--eval-every {} needs --val SOURCE, the held-out data it evaluates (e.g. --val "
               "idx:/usr/share/datasets/fashion-mnist:test)", eval_every);
  if (!eval_every.empty()) (void)parse_eval_every(eval_every);
  if (!checkpoint_dir.empty()) {
    DDPX_REQUIRE(!std::filesystem::exists(checkpoint_dir) || std::filesystem::is_directory(checkpoint_dir),
                 "--checkpoint-dir {}: that is a file, not a folder; give a folder path", checkpoint_dir);
    require_checkpoint_folder(checkpoint_dir, "--checkpoint-dir");  // ddpx owns the names inside: no link followed
  }
  require_distinct_paths();
  DDPX_REQUIRE(images.empty() == labels.empty(), "--images and --labels must be given together");
  DDPX_REQUIRE(!reset_head || !load.empty(),
               "--reset-head needs --load W (it loads every tensor of W but the classifier head)");
  DDPX_REQUIRE(epochs >= 0, "--epochs {}: give a positive number of epochs (or --steps N)", epochs);
  DDPX_REQUIRE(image_pipeline.max_pixels > 0, "--max-pixels {}: must be positive", image_pipeline.max_pixels);
  DDPX_REQUIRE(image_pipeline.shuffle_buffer >= 0 || image_pipeline.shuffle_buffer == kAutoShuffleBuffer,
               "--shuffle-buffer {}: give a number of samples, 0 or more (0 or 1: off, the shards' stored order), or "
               "auto", image_pipeline.shuffle_buffer);
  DDPX_REQUIRE(!image_pipeline.auto_augment.enabled() || data.is_image_source(),
               "{} augments the images the loader decodes: it needs an image source (--data idx:, folder:, pack: or "
               "wds:), not --data {}", image_pipeline.auto_augment.flag(),
               data.source == DataSource::npy ? "npy (--images)" : data.text());
  DDPX_REQUIRE(!image_pipeline.random_erasing.enabled() || data.is_image_source(),
               "--random-erase {} erases part of the images the loader decodes: it needs an image source (--data "
               "idx:, folder:, pack: or wds:), not --data {}", image_pipeline.random_erasing.probability,
               data.source == DataSource::npy ? "npy (--images)" : data.text());
  DDPX_REQUIRE(!image_pipeline.random_erasing.enabled() || !normalizes_on_device(*this),
               "--random-erase {} with --normalize device: RandomErasing works on the normalized float image on the "
               "loader threads (after Normalize, as torchvision's recipe); drop --normalize device (host is the "
               "default)", image_pipeline.random_erasing.probability);
  // Flags that contradict each other first: a missing file is not the mistake to report when both are given.
  DDPX_REQUIRE(load.empty() || resume.empty(),
               "--load {} and --resume {} both set the weights; --resume continues a run (weights, optimizer, step), "
               "--load starts a new one from weights: give one", load, resume);
  for (const auto& [flag, path] : {std::pair{"--images", images}, {"--labels", labels}, {"--load", load}})
    DDPX_REQUIRE(path.empty() || std::filesystem::exists(path), "{} {}: no such file; check the path", flag, path);
  if (resume_mode(resume) == ResumeMode::newest) {
    DDPX_REQUIRE(!checkpoint_dir.empty(),
                 "--resume auto needs --checkpoint-dir DIR: it continues from DIR's newest checkpoint when there is "
                 "one and starts at step 0 when there is none");
  } else if (resume_mode(resume) == ResumeMode::checkpoint) {
    DDPX_REQUIRE(checkpoint_exists(resume),
                 "--resume {}: no checkpoint there ({} does not exist); give the --checkpoint-dir of an earlier run, "
                 "or --resume auto --checkpoint-dir DIR to continue when DIR holds one and start afresh when not",
                 resume, checkpoint_file(resume).string());
  }
  DDPX_REQUIRE(data.source != DataSource::synthetic_device || device == Device::cuda,
               "--data synthetic-device needs --device cuda");
  require_serves(backend, device);  // the backend registry's device rule and message
  DDPX_REQUIRE(ranks_per_gpu >= 0, "--ranks-per-gpu {}: must be 1 or more", ranks_per_gpu);
  DDPX_REQUIRE(ranks_per_gpu <= 1 || device == Device::cuda,
               "--ranks-per-gpu {} applies to --device cuda (CPU ranks share the cores already)", ranks_per_gpu);
}

std::string resume_checkpoint(const TrainOptions& options) {
  if (resume_mode(options.resume) != ResumeMode::newest) return options.resume;
  return checkpoint_exists(options.checkpoint_dir) ? options.checkpoint_dir : "";
}

bool optimizer_overlaps(OverlapPolicy policy, bool with_reducer) {
  return policy == OverlapPolicy::on || (policy == OverlapPolicy::automatic && with_reducer);
}

bool updates_overlap_backward(const TrainOptions& options, bool with_reducer) {
  return optimizer_overlaps(options.optimizer_overlap, with_reducer) && options.recipe.clip_grad_norm == 0 &&
         !(options.device == Device::cuda && options.recipe.no_decay);
}

bool weight_grads_in_bf16(const TrainOptions& options, bool reducer_reads_gradients) {
  return options.weight_grads == WeightGradPolicy::automatic && options.device == Device::cuda &&
         options.precision == Precision::bf16 && !reducer_reads_gradients && options.grad_accum == 1 &&
         options.recipe.clip_grad_norm == 0;  // the clip's norm reads every gradient as fp32
}

bool reducer_reads_gradients(const TrainOptions& options, bool with_communicator, int world) {
  return with_communicator && comm_hook_reads_bucket(options.comm_hook, world);
}

bool normalizes_on_device(const TrainOptions& options) {
  return options.device == Device::cuda && options.data.is_image_source() &&
         options.normalize_on == NormalizeOn::device;
}

EngineOptions engine_options(const TrainOptions& options, bool reducer_reads_gradients) {
  return {.device = options.device,
          .precision = options.precision,
          .batch = options.batch,
          .optimizer = options.optimizer,
          .data = options.data.source,
          .seed = options.seed,
          .device_normalization = normalizes_on_device(options),
          .normalization = options.image_pipeline.normalization,
          .cpu_threads = options.cpu_threads,
          .divergence_ratio = options.divergence_ratio,
          .bf16_weight_grads = weight_grads_in_bf16(options, reducer_reads_gradients),
          .recipe = options.recipe};
}

}  // namespace ddpx
