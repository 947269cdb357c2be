// DDPX_REQUIRE_GPU(): skip the current GoogleTest test (reported as skipped, never failed) when no CUDA device
// is usable here, so GPU-labelled tests run on the GPU machine and skip cleanly on CI.
#pragma once
#include <gtest/gtest.h>

namespace ddpx::testing {
bool gpu_available();  // defined in tests/gpu_guard.cpp (cudaGetDeviceCount > 0), false in CPU-only builds
int gpu_count();       // cudaGetDeviceCount, 0 where none (or a CPU-only build)
}

// DDPX_REQUIRE_GPUS(n): skip unless at least n CUDA devices are visible (multi-GPU tests on a multi-GPU machine).
#define DDPX_REQUIRE_GPUS(n)                                                                              \
  do {                                                                                                    \
    if (::ddpx::testing::gpu_count() < (n))                                                               \
      GTEST_SKIP() << "needs " << (n) << " CUDA GPUs, " << ::ddpx::testing::gpu_count() << " visible here"; \
  } while (0)

#define DDPX_REQUIRE_GPU()                                                      \
  do {                                                                          \
    if (!::ddpx::testing::gpu_available()) GTEST_SKIP() << "no CUDA GPU here";  \
  } while (0)
