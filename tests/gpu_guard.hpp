// DDPX_REQUIRE_GPU(): skip the current GoogleTest test (reported as skipped, never failed) when no CUDA device
// is usable here, so GPU-labelled tests run on the GPU machine and skip cleanly on CI.
#pragma once
#include <gtest/gtest.h>

namespace ddpx::testing {
bool gpu_available();  // defined in tests/gpu_guard.cpp (cudaGetDeviceCount > 0), false in CPU-only builds
}

#define DDPX_REQUIRE_GPU()                                                      \
  do {                                                                          \
    if (!::ddpx::testing::gpu_available()) GTEST_SKIP() << "no CUDA GPU here";  \
  } while (0)
