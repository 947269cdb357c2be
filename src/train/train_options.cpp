// Validation of TrainOptions; every message names the flag and the accepted range.
#include "train/train_options.hpp"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "ddp/comm_hook.hpp"
#include "profile/profile_window.hpp"

namespace ddpx {
namespace {

// An output file is checked before the run, not after hours of training: its folder exists and is writable.
void require_writable_file(const std::string& path, const char* flag) {
  if (path.empty()) return;
  const std::filesystem::path file(path);
  const std::filesystem::path folder = file.parent_path().empty() ? std::filesystem::path(".") : file.parent_path();
  DDPX_REQUIRE(!std::filesystem::is_directory(file), "{} {}: that is a folder; give a file name", flag, path);
  DDPX_REQUIRE(std::filesystem::is_directory(folder) && ::access(folder.c_str(), W_OK) == 0,
               "{} {}: the folder '{}' does not exist or is not writable; create it or choose another path", flag,
               path, folder.string());
}

}  // namespace

void TrainOptions::validate() const {
  DDPX_REQUIRE(device == "cpu" || device == "cuda", "--device '{}' is not known; choose cpu or cuda", device);
  DDPX_REQUIRE(precision == "fp32" || precision == "tf32" || precision == "bf16",
               "--precision '{}' is not known; choose fp32, tf32 or bf16", precision);
  DDPX_REQUIRE(device == "cuda" || precision == "fp32",
               "--precision {} needs --device cuda (the CPU engine computes in fp32)", precision);
  DDPX_REQUIRE(batch > 0, "--batch must be a positive number of images per rank, got {}", batch);
  DDPX_REQUIRE(steps > 0, "--steps must be positive, got {}", steps);
  DDPX_REQUIRE(warmup_steps >= 0, "--warmup must be >= 0, got {}", warmup_steps);
  DDPX_REQUIRE(workers >= 1 && workers <= 256, "--workers must be in [1, 256], got {}", workers);
  DDPX_REQUIRE(prefetch == 0 || (prefetch >= 2 && prefetch <= 258), "--prefetch must be 0 (auto) or in [2, 258], got {}",
               prefetch);
  DDPX_REQUIRE(cpu_threads >= 0 && cpu_threads <= 4096,
               "--cpu-threads must be 0 (the node's cores shared by its ranks) or a thread count, got {}", cpu_threads);
  DDPX_REQUIRE(cpu_threads == 0 || device == "cpu", "--cpu-threads {} applies to --device cpu only", cpu_threads);
  DDPX_REQUIRE(lr > 0, "--lr must be positive, got {}", lr);
  DDPX_REQUIRE(grad_accum >= 1, "--grad-accum must be >= 1, got {}", grad_accum);
  // Bucket caps between 4 bytes (one fp32 gradient) and 1 TB; checked here, also without --ddp, so that a typo
  // never waits for the run that would use it (and the cast to bytes can never overflow).
  constexpr double kMinBucketMb = 4.0 / (1 << 20), kMaxBucketMb = 1e6;
  for (const auto& [flag, mb] : {std::pair{"--bucket-mb", bucket_mb}, {"--first-bucket-mb", first_bucket_mb}})
    DDPX_REQUIRE(std::isfinite(mb) && mb >= kMinBucketMb && mb <= kMaxBucketMb,
                 "{} must be between {:.2g} (4 bytes) and {:g} MB, got {}", flag, kMinBucketMb, kMaxBucketMb, mb);
  DDPX_REQUIRE(std::isfinite(comm_timeout_s) && comm_timeout_s >= 0.001 && comm_timeout_s <= 1e7,
               "--comm-timeout must be between 0.001 and 1e7 seconds, got {}", comm_timeout_s);
  (void)make_comm_hook(comm_hook);  // refuses an unknown --comm-hook (naming it) even when no reducer will use it
  if (!profile_steps.empty()) {
    const StepRange range = parse_profile_steps(profile_steps);
    DDPX_REQUIRE(device == "cuda", "--profile-steps {} needs --device cuda (it starts and stops the CUDA profiler "
                 "for nsys --capture-range=cudaProfilerApi)", profile_steps);
    DDPX_REQUIRE(range.last <= steps, "--profile-steps {}: the run has only --steps {}", profile_steps, steps);
  }
  DDPX_REQUIRE(checkpoint_every >= 0, "--checkpoint-every must be >= 0, got {}", checkpoint_every);
  DDPX_REQUIRE(checkpoint_every == 0 || !checkpoint_dir.empty(),
               "--checkpoint-every {} needs --checkpoint-dir DIR", checkpoint_every);
  DDPX_REQUIRE(log_every >= 1, "--log-every must be >= 1, got {}", log_every);
  require_writable_file(save, "--save");
  require_writable_file(report, "--report");
  require_writable_file(trace, "--trace");
  DDPX_REQUIRE(report.empty() || steps > warmup_steps,
               "--report {} needs steps past the warm-up (only those are measured): --steps {} is not more than "
               "--warmup {}; raise --steps or lower --warmup", report, steps, warmup_steps);
  DDPX_REQUIRE(images.empty() == labels.empty(), "--images and --labels must be given together");
  DDPX_REQUIRE(load.empty() || resume.empty(),
               "--load {} and --resume {} both set the weights; --resume continues a run (weights, optimizer, step), "
               "--load starts a new one from weights: give one", load, resume);
  DDPX_REQUIRE(data == "synthetic" || data == "learnable" || data == "synthetic-device" || data == "npy",
               "--data '{}' is not known; choose synthetic, learnable, synthetic-device (cuda), or give "
               "--images/--labels",
               data);
  DDPX_REQUIRE(data != "synthetic-device" || device == "cuda", "--data synthetic-device needs --device cuda");
  DDPX_REQUIRE(cuda_graph == "auto" || cuda_graph == "on" || cuda_graph == "off",
               "--cuda-graph '{}' is not known; choose auto, on or off", cuda_graph);
  DDPX_REQUIRE(backend == "auto" || backend == "nccl" || backend == "mpi" || backend == "gloo",
               "--backend '{}' is not known; choose auto, nccl, mpi or gloo", backend);
  DDPX_REQUIRE(!(device == "cpu" && backend == "nccl"),
               "--backend nccl needs --device cuda (CPU training uses mpi or gloo)");
  DDPX_REQUIRE(!(device == "cuda" && backend == "gloo"),
               "--backend gloo reduces host buffers: it needs --device cpu (GPU training uses nccl)");
}

}  // namespace ddpx
