// How a test's N ranks run on this machine's GPUs: one GPU each where there are N, else K ranks sharing each GPU
// (`--ranks-per-gpu K`) where the loaded NCCL is 2.30 or newer (NCCL_MULTI_RANK_GPU_ENABLE), else the test skips
// naming both ways. So the multi-rank GPU cases run on a one-GPU machine with NCCL 2.30 (bench/nccl-multirank.sh
// builds it there) and skip with that reason on CI and machines with an older NCCL.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "dist/gpu_selection.hpp"
#include "gpu_guard.hpp"

namespace ddpx::testing {

// The extra flags that put `ranks` ranks on this machine's GPUs ("" when each gets its own; " --ranks-per-gpu K"
// when they share), or why they can't run here.
struct GpuRanksPlan {
  bool runs = false;
  std::string flags;
  std::string why_not;
};

inline GpuRanksPlan plan_gpu_ranks(int ranks) {
  const int gpus = gpu_count();
  if (gpus >= ranks) return {.runs = true};
  const int nccl = nccl_library_version_code();
  if (gpus >= 1 && nccl >= kNcclMultiRankGpuVersion) {
    const int per_gpu = (ranks + gpus - 1) / gpus;
    return {.runs = true, .flags = " --ranks-per-gpu " + std::to_string(per_gpu)};
  }
  return {.why_not = "needs " + std::to_string(ranks) + " CUDA GPUs (" + std::to_string(gpus) +
                     " visible) or NCCL 2.30+ to share one (loaded: " +
                     (nccl > 0 ? nccl_version_text(nccl) : std::string("none")) + ")"};
}

}  // namespace ddpx::testing

// DDPX_REQUIRE_GPU_RANKS(plan, n): skip unless n ranks can run here; `plan` then holds the flags that place them.
#define DDPX_REQUIRE_GPU_RANKS(plan, n)                                  \
  const ::ddpx::testing::GpuRanksPlan plan = ::ddpx::testing::plan_gpu_ranks(n); \
  do {                                                                   \
    if (!plan.runs) GTEST_SKIP() << plan.why_not;                        \
  } while (0)
