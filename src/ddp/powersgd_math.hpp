// PowerSgdBucketMath: the numerical steps of PowerSGD for one bucket, on the host (OpenBLAS) or a GPU (cuBLAS
// batched gemms + small kernels). Owns the bucket's error-feedback buffer and its P, Q and packed buffers, in
// the memory of its device (so the hook can hand them to the communicator directly).
// Guarantees: every method works on `bucket` (the bucket's first element, the same pointer every step) and the
// owned buffers only; CUDA versions enqueue on `stream` without host synchronization (set_q excepted: it
// copies from the host); host versions complete before returning. The hook (powersgd_hook.cpp) sequences them.
#pragma once
#include <memory>
#include <vector>

#include "ddp/powersgd_layout.hpp"

namespace ddpx {

enum class GradDevice;  // bucket_view.hpp (C++20); this header stays C++17 for the CUDA math

class PowerSgdBucketMath {
 public:
  virtual ~PowerSgdBucketMath() = default;
  virtual float* p() = 0;       // p_elements
  virtual float* q() = 0;       // q_elements
  virtual float* packed() = 0;  // uncompressed_elements

  virtual void set_q(const std::vector<float>& host_q, void* stream) = 0;
  virtual void apply_error_feedback(float* bucket, void* stream) = 0;  // bucket += E; E = bucket
  virtual void pack_uncompressed(const float* bucket, void* stream) = 0;
  virtual void unpack_uncompressed(float* bucket, void* stream) = 0;
  virtual void orthogonalize_q(void* stream) = 0;                      // Gram-Schmidt on each Q's columns
  virtual void compute_p(const float* bucket, void* stream) = 0;       // P_i = M_i Q_i
  virtual void orthogonalize_p(void* stream) = 0;
  virtual void compute_q(const float* bucket, void* stream) = 0;       // Q_i = M_i^T P_i
  virtual void write_approximation(float* bucket, void* stream) = 0;   // M_i = P_i Q_i^T
  virtual void update_error(const float* bucket, void* stream) = 0;    // E -= bucket
};

std::unique_ptr<PowerSgdBucketMath> make_powersgd_math(const CompressionLayout& layout, GradDevice device);
std::unique_ptr<PowerSgdBucketMath> make_host_powersgd_math(const CompressionLayout& layout);
#ifdef DDPX_HAVE_CUDA
std::unique_ptr<PowerSgdBucketMath> make_cuda_powersgd_math(const CompressionLayout& layout);
#endif

// Gram-Schmidt over the columns of a row-major [rows, cols] matrix, in place (PyTorch's _orthogonalize with
// epsilon 0, except that an all-zero column stays zero instead of becoming NaN).
void orthogonalize_columns(float* matrix, int64_t rows, int64_t cols);

}  // namespace ddpx
