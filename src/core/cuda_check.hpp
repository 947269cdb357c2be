// CUDA runtime and cuBLASLt return-code checks, for every CUDA-built part (kernels, cuda, train, cli). Header-only;
// include it only from code compiled with CUDA (it includes the CUDA headers).
// Guarantee: a failed call becomes a ddpx::Error naming the call (or kernel), file:line and the error's name and
// description; nothing here aborts. Kernel launches are checked with cudaGetLastError right after the launch
// (launch-configuration errors); errors raised while a kernel runs surface at the next synchronizing call.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

#include "core/error.hpp"

namespace ddpx::detail {

inline void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess)
    fail("CUDA call {} failed at {}:{}: {} ({})", call, file, line, cudaGetErrorName(status),
         cudaGetErrorString(status));
}

inline void check_kernel_launch(const char* kernel, const char* file, int line) {
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    fail("CUDA kernel launch {} failed at {}:{}: {} ({})", kernel, file, line, cudaGetErrorName(status),
         cudaGetErrorString(status));
}

inline const char* cublas_status_name(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED (no CUDA device or driver?)";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED (out of memory)";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE (bad shape, leading dimension or alignment)";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH (feature not supported by this GPU)";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED (type/epilogue combination not supported)";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "unknown cuBLAS status";
  }
}

inline void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS)
    fail("cuBLASLt call {} failed at {}:{}: {} (status {})", call, file, line, cublas_status_name(status),
         static_cast<int>(status));
}

}  // namespace ddpx::detail

#define DDPX_CUDA_CHECK(call) ::ddpx::detail::check_cuda((call), #call, __FILE__, __LINE__)
#define DDPX_CUBLAS_CHECK(call) ::ddpx::detail::check_cublas((call), #call, __FILE__, __LINE__)
#define DDPX_CHECK_LAUNCH(kernel_name) ::ddpx::detail::check_kernel_launch(kernel_name, __FILE__, __LINE__)
