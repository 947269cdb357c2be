// Implementation of DDPX_REQUIRE_GPU's probe; asks the CUDA runtime once.
#include "gpu_guard.hpp"
#ifdef DDPX_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace ddpx::testing {
int gpu_count() {
#ifdef DDPX_HAVE_CUDA
  static const int count = [] {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
  }();
  return count;
#else
  return 0;
#endif
}

bool gpu_available() { return gpu_count() > 0; }
}  // namespace ddpx::testing
