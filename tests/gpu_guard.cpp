// Implementation of DDPX_REQUIRE_GPU's probe; asks the CUDA runtime once.
#include "gpu_guard.hpp"
#ifdef DDPX_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace ddpx::testing {
bool gpu_available() {
#ifdef DDPX_HAVE_CUDA
  static const bool available = [] {
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  }();
  return available;
#else
  return false;
#endif
}
}  // namespace ddpx::testing
