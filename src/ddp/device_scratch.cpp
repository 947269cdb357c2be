// DeviceScratch: cudaMalloc'd, grow-only; in CPU-only builds it holds nothing and reserve() is an error.
#include "ddp/device_scratch.hpp"

#include "core/error.hpp"
#ifdef DDPX_HAVE_CUDA
#include <cuda_runtime.h>

#include "core/cuda_check.hpp"
#endif

namespace ddpx {

#ifdef DDPX_HAVE_CUDA
DeviceScratch::~DeviceScratch() {
  if (data_) cudaFree(data_);
}

void* DeviceScratch::reserve(size_t bytes) {
  if (bytes <= bytes_) return data_;
  if (data_) {
    // Work enqueued earlier may still use the old allocation (PowerSGD buckets share one scratch).
    DDPX_CUDA_CHECK(cudaDeviceSynchronize());
    cudaFree(data_);
  }
  data_ = nullptr;
  bytes_ = 0;
  cudaError_t status = cudaMalloc(&data_, bytes);
  DDPX_REQUIRE(status == cudaSuccess, "communication hook: cudaMalloc of {} bytes of scratch failed: {}", bytes,
               cudaGetErrorString(status));
  bytes_ = bytes;
  return data_;
}
#else
DeviceScratch::~DeviceScratch() = default;

void* DeviceScratch::reserve(size_t bytes) {
  fail("communication hook: {} bytes of device scratch requested, but this ddpx was built without CUDA", bytes);
}
#endif

}  // namespace ddpx
