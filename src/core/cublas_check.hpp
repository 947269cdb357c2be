// cuBLASLt return-code checks (kernels/matmul.cpp). Header-only; include it only from code that links cuBLASLt
// (CUDA runtime checks are core/cuda_check.hpp, which does not pull cuBLAS in).
// Guarantee: a failed call becomes a ddpx::Error naming the call, file:line, the status's name with a hint at its
// usual cause, and its number; nothing here aborts.
#pragma once
#include <cublasLt.h>

#include "core/error.hpp"

namespace ddpx::detail {

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

#define DDPX_CUBLAS_CHECK(call) ::ddpx::detail::check_cublas((call), #call, __FILE__, __LINE__)
