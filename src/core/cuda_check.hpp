// CUDA runtime return-code checks, the one way every CUDA-built part (kernels, cuda, ddp, dist, profile, train, cli)
// checks a CUDA result. Header-only; needs only the CUDA runtime (cuda_runtime.h), not cuBLAS: cuBLASLt's checks
// are in core/cublas_check.hpp. Include it only from code compiled with CUDA.
// Guarantee: a failed call becomes a ddpx::Error naming the call, file:line and the error's name and description;
// nothing here aborts. Kernel launches are checked by core/kernel_launch.cuh, the one way ddpx launches kernels;
// errors raised while a kernel runs surface at the next synchronizing call.
#pragma once
#include <cuda_runtime.h>

#include "core/error.hpp"

namespace ddpx::detail {

inline void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess)
    fail("CUDA call {} failed at {}:{}: {} ({})", call, file, line, cudaGetErrorName(status),
         cudaGetErrorString(status));
}

}  // namespace ddpx::detail

#define DDPX_CUDA_CHECK(call) ::ddpx::detail::check_cuda((call), #call, __FILE__, __LINE__)
