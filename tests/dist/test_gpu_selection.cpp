// The per-rank CUDA device choice with the device count injected (no GPU needed), several ranks per GPU, and
// the NCCL version check for them.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "dist/gpu_selection.hpp"
#include "error_expect.hpp"

namespace ddpx {
namespace {

using testing::expect_error;

GpuChoiceInput ranks(int local_rank, int local_world, int visible) {
  GpuChoiceInput in;
  in.rank = local_rank + 4;  // a rank on a second node
  in.local_rank = local_rank;
  in.local_world_size = local_world;
  in.visible_gpus = visible;
  return in;
}

TEST(GpuSelection, OneVisibleGpuIsUsedWhateverTheLocalRank) {
  GpuChoiceInput in = ranks(3, 4, 1);
  in.cuda_visible_devices = "3";  // srun --gpus-per-task=1 / --gpu-bind: task 3 sees its own GPU only
  EXPECT_EQ(choose_cuda_device(in).device, 0);
  EXPECT_FALSE(choose_cuda_device(in).shares_gpu);
  EXPECT_EQ(choose_cuda_device(ranks(0, 1, 1)).device, 0);
}

TEST(GpuSelection, LocalRankAmongTheVisibleGpus) {
  for (int local = 0; local < 8; ++local) EXPECT_EQ(choose_cuda_device(ranks(local, 8, 8)).device, local);
  GpuChoiceInput in = ranks(1, 2, 2);
  in.cuda_visible_devices = "4,5";
  EXPECT_EQ(choose_cuda_device(in).device, 1);  // the second of the two it sees (physical GPU 5)
}

TEST(GpuSelection, TooFewGpusNamesTheCountsAndCudaVisibleDevices) {
  GpuChoiceInput in = ranks(2, 4, 2);
  in.cuda_visible_devices = "0,1";
  expect_error([&] { choose_cuda_device(in); },
               {"rank 6 (local rank 2) needs GPU 2", "2 GPU(s) are visible (CUDA_VISIBLE_DEVICES=0,1)",
                "at most 2 rank(s) per node", "--ranks-per-gpu"});
  expect_error([&] { choose_cuda_device(ranks(0, 1, 0)); }, {"no CUDA GPU is visible", "CUDA_VISIBLE_DEVICES not set"});
  // One GPU, nothing bound per task, a second local rank: both would use the same GPU.
  expect_error([&] { choose_cuda_device(ranks(1, 2, 1)); },
               {"only 1 GPU is visible and CUDA_VISIBLE_DEVICES is not set", "--gpus-per-task=1"});
}

TEST(GpuSelection, SeveralRanksPerGpuOnlyWhenAskedFor) {
  GpuChoiceInput in = ranks(5, 8, 4);
  in.ranks_per_gpu = 2;
  EXPECT_EQ(choose_cuda_device(in).device, 2);
  EXPECT_TRUE(choose_cuda_device(in).shares_gpu);
  in.ranks_per_gpu = 4;
  EXPECT_EQ(choose_cuda_device(in).device, 1);
  GpuChoiceInput one = ranks(1, 2, 1);
  one.ranks_per_gpu = 2;
  EXPECT_EQ(choose_cuda_device(one).device, 0);
  // The variable alone: K = local ranks / visible GPUs, rounded up (8 ranks on 3 GPUs: 3 per GPU).
  GpuChoiceInput env = ranks(7, 8, 3);
  env.multi_rank_env = true;
  EXPECT_EQ(choose_cuda_device(env).ranks_per_gpu, 3);
  EXPECT_EQ(choose_cuda_device(env).device, 2);
  // --ranks-per-gpu 1 turns sharing off even with the variable set.
  env.ranks_per_gpu = 1;
  GpuChoiceInput off = ranks(2, 3, 3);
  off.multi_rank_env = true;
  off.ranks_per_gpu = 1;
  EXPECT_FALSE(choose_cuda_device(off).shares_gpu);
  EXPECT_EQ(choose_cuda_device(off).device, 2);
  EXPECT_THROW(choose_cuda_device(env), Error);  // local rank 7 has no GPU of its own among 3
  GpuChoiceInput too_many = ranks(6, 8, 2);
  too_many.ranks_per_gpu = 2;
  expect_error([&] { choose_cuda_device(too_many); }, {"needs GPU 3 (local rank / 2 ranks per GPU)", "at most 4"});
}

TEST(GpuSelection, NcclOlderThan230IsRefusedNamingBothVersions) {
  EXPECT_EQ(nccl_version_text(22803), "2.28.3");
  EXPECT_EQ(nccl_version_text(23000), "2.30.0");
  EXPECT_EQ(nccl_version_text(2708), "2.7.8");
  expect_error([] { require_nccl_for_shared_gpus(22803, "--ranks-per-gpu 2"); },
               {"--ranks-per-gpu 2", "NCCL 2.30.0 or newer", "loaded NCCL 2.28.3"});
  expect_error([] { require_nccl_for_shared_gpus(22809, "NCCL_MULTI_RANK_GPU_ENABLE=1"); },
               {"NCCL_MULTI_RANK_GPU_ENABLE=1", "2.28.9"});
  EXPECT_NO_THROW(require_nccl_for_shared_gpus(23000, "--ranks-per-gpu 2"));
  EXPECT_NO_THROW(require_nccl_for_shared_gpus(23104, "--ranks-per-gpu 2"));
}

}  // namespace
}  // namespace ddpx
