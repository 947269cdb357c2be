// CUDA device choice per rank; see gpu_selection.hpp.
#include "dist/gpu_selection.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "core/error.hpp"
#ifdef DDPX_HAVE_CUDA
#include <cuda_runtime.h>
#include <nccl.h>
#endif

namespace ddpx {
namespace {

std::string visible_text(const GpuChoiceInput& in) {
  return in.cuda_visible_devices ? fmt::format("CUDA_VISIBLE_DEVICES={}", *in.cuda_visible_devices)
                                 : std::string("CUDA_VISIBLE_DEVICES not set");
}

}  // namespace

GpuChoice choose_cuda_device(const GpuChoiceInput& in) {
  DDPX_REQUIRE(in.ranks_per_gpu >= 0, "--ranks-per-gpu {}: must be 1 or more", in.ranks_per_gpu);
  DDPX_REQUIRE(in.visible_gpus > 0, "rank {}: no CUDA GPU is visible to this process ({}); check the allocation "
               "(srun --gpus-per-task, CUDA_VISIBLE_DEVICES) or train on the CPU with --device cpu",
               in.rank, visible_text(in));
  GpuChoice choice;
  if (in.ranks_per_gpu >= 2) {
    choice.ranks_per_gpu = in.ranks_per_gpu;
  } else if (in.ranks_per_gpu == 0 && in.multi_rank_env) {
    choice.ranks_per_gpu = std::max(1, (in.local_world_size + in.visible_gpus - 1) / in.visible_gpus);
  }
  choice.shares_gpu = in.ranks_per_gpu >= 2 || (in.ranks_per_gpu == 0 && in.multi_rank_env);
  if (in.visible_gpus == 1) {
    DDPX_REQUIRE(choice.shares_gpu || in.local_rank == 0 || in.cuda_visible_devices,
                 "rank {} (local rank {}): only 1 GPU is visible and CUDA_VISIBLE_DEVICES is not set, so local ranks "
                 "0..{} of this node would all use it; bind one GPU per task (srun --gpus-per-task=1, --gpu-bind, "
                 "or a CUDA_VISIBLE_DEVICES per rank), start one rank per GPU, or share it on purpose with "
                 "--ranks-per-gpu K (NCCL 2.30+)",
                 in.rank, in.local_rank, in.local_rank);
    choice.device = 0;
    return choice;
  }
  choice.device = in.local_rank / choice.ranks_per_gpu;
  DDPX_REQUIRE(choice.device < in.visible_gpus,
               "rank {} (local rank {}) needs GPU {}{}, but {} GPU(s) are visible ({}); start at most {} rank(s) "
               "per node, give each task one GPU of its own (srun --gpus-per-task=1, or a CUDA_VISIBLE_DEVICES per "
               "rank), or share GPUs with --ranks-per-gpu K (NCCL 2.30+)",
               in.rank, in.local_rank, choice.device,
               choice.ranks_per_gpu > 1 ? fmt::format(" (local rank / {} ranks per GPU)", choice.ranks_per_gpu) : "",
               in.visible_gpus, visible_text(in), in.visible_gpus * choice.ranks_per_gpu);
  return choice;
}

std::string nccl_version_text(int code) {
  if (code >= 10000) return fmt::format("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100);
  return fmt::format("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100);  // before 2.9: 2708 is 2.7.8
}

int nccl_library_version_code() {
#ifdef DDPX_HAVE_CUDA
  int version = 0;
  return ncclGetVersion(&version) == ncclSuccess ? version : 0;
#else
  return 0;
#endif
}

void require_nccl_for_shared_gpus(int version_code, const std::string& how) {
  DDPX_REQUIRE(version_code >= kNcclMultiRankGpuVersion,
               "{}: several ranks on one GPU need NCCL {} or newer (NCCL_MULTI_RANK_GPU_ENABLE), but this process "
               "loaded NCCL {}; run one rank per GPU, or use an NCCL of {} or later (LD_LIBRARY_PATH)",
               how, nccl_version_text(kNcclMultiRankGpuVersion), nccl_version_text(version_code),
               nccl_version_text(kNcclMultiRankGpuVersion));
}

GpuChoiceInput gpu_choice_input(const WorldInfo& world, int visible_gpus, const EnvLookup& env) {
  GpuChoiceInput in;
  in.rank = world.rank;
  in.local_rank = world.local_rank;
  in.local_world_size = world.local_world_size;
  in.visible_gpus = visible_gpus;
  in.cuda_visible_devices = env("CUDA_VISIBLE_DEVICES");
  in.ranks_per_gpu = world.ranks_per_gpu;
  in.multi_rank_env = env("NCCL_MULTI_RANK_GPU_ENABLE").value_or("") == "1";
  return in;
}

int bind_cuda_device(const WorldInfo& world) {
#ifdef DDPX_HAVE_CUDA
  int visible = 0;
  if (cudaGetDeviceCount(&visible) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver: report it as no GPU visible
    visible = 0;
  }
  const GpuChoiceInput in = gpu_choice_input(world, visible);
  const GpuChoice choice = choose_cuda_device(in);
  if (choice.shares_gpu) {
    int version = 0;
    DDPX_REQUIRE(ncclGetVersion(&version) == ncclSuccess, "rank {}: ncclGetVersion failed", world.rank);
    require_nccl_for_shared_gpus(version, in.ranks_per_gpu >= 2
                                              ? fmt::format("--ranks-per-gpu {}", in.ranks_per_gpu)
                                              : std::string("NCCL_MULTI_RANK_GPU_ENABLE=1"));
    ::setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", 1);
  }
  const cudaError_t status = cudaSetDevice(choice.device);
  DDPX_REQUIRE(status == cudaSuccess, "rank {}: cudaSetDevice({}) failed: {}", world.rank, choice.device,
               cudaGetErrorString(status));
  return choice.device;
#else
  fail("rank {}: this ddpx was built without CUDA, so it has no GPU to bind; use --device cpu", world.rank);
#endif
}

}  // namespace ddpx
