// Which CUDA device a rank uses: the one place that decides it (the NCCL bootstrap and the trainer both call
// bind_cuda_device()), and the check that several ranks may share a GPU.
// Guarantees of choose_cuda_device() (pure: the device count and the environment are given, so it is tested on
// machines without a GPU):
//  - No GPU visible: an error naming CUDA_VISIBLE_DEVICES.
//  - One rank per GPU (the default): exactly one GPU visible -> device 0 (what Slurm's --gpus-per-task=1,
//    --gpu-bind or any per-rank CUDA_VISIBLE_DEVICES leave each task); otherwise device = local rank among the
//    visible GPUs; a local rank without a GPU of its own is an error naming the rank, the local rank, the visible
//    count and CUDA_VISIBLE_DEVICES. One visible GPU, CUDA_VISIBLE_DEVICES unset and local rank > 0 means that
//    several ranks of this node see the same single GPU (nothing bound one per task): an error too, since NCCL
//    would refuse it later ("Duplicate GPU detected") with less to go on.
//  - Several ranks per GPU, opt-in only: --ranks-per-gpu K (K >= 2), or NCCL_MULTI_RANK_GPU_ENABLE=1 (then K =
//    the local ranks divided by the visible GPUs, rounded up): device = local rank / K (device 0 when one GPU is
//    visible). shares_gpu is then true, and require_nccl_for_shared_gpus() must pass.
//  - require_nccl_for_shared_gpus() refuses NCCL older than 2.30 (the first with NCCL_MULTI_RANK_GPU_ENABLE),
//    naming the version found and the one needed.
//  - bind_cuda_device() reads the device count and NCCL's version at run time, applies the rules above, exports
//    NCCL_MULTI_RANK_GPU_ENABLE=1 when --ranks-per-gpu asked for sharing, and makes the device current. Calling
//    it again gives the same device.
#pragma once
#include <optional>
#include <string>

#include "dist/bootstrap.hpp"

namespace ddpx {

struct GpuChoiceInput {
  int rank = 0;
  int local_rank = 0;
  int local_world_size = 1;
  int visible_gpus = 0;                             // cudaGetDeviceCount
  std::optional<std::string> cuda_visible_devices;  // as the environment says; nullopt when unset
  int ranks_per_gpu = 0;                            // --ranks-per-gpu; 0: not given
  bool multi_rank_env = false;                      // NCCL_MULTI_RANK_GPU_ENABLE=1
};

struct GpuChoice {
  int device = 0;
  int ranks_per_gpu = 1;    // in effect
  bool shares_gpu = false;  // opted in to several ranks per GPU
};

GpuChoice choose_cuda_device(const GpuChoiceInput& input);

// NCCL's version code (ncclGetVersion: 22803 for 2.28.3) as "2.28.3".
std::string nccl_version_text(int version_code);
// The loaded NCCL's version code (ncclGetVersion); 0 in a build without CUDA or when NCCL does not say.
int nccl_library_version_code();
inline constexpr int kNcclMultiRankGpuVersion = 23000;  // 2.30.0
// `how` names the opt-in in the message ("--ranks-per-gpu 2" or "NCCL_MULTI_RANK_GPU_ENABLE=1").
void require_nccl_for_shared_gpus(int version_code, const std::string& how);

// GpuChoiceInput for `world` from this process's environment and the given visible device count.
GpuChoiceInput gpu_choice_input(const WorldInfo& world, int visible_gpus, const EnvLookup& env = process_environment());

// Chooses, checks and sets the current CUDA device for `world`; returns it. Only in builds with CUDA.
int bind_cuda_device(const WorldInfo& world);

}  // namespace ddpx
