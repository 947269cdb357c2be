// Pieces shared by the attention kernel files (attention.cu, attention_tensor_core_*.cu, attention_tf32.cu): the
// online-softmax step and the bias-sum and log-sum-exp epilogues of the mma.sync kernels, whose C tiles have the
// same layout in both tensor-core types (16 x 8 fp32, rows g and g + 8, columns 2t and 2t + 1; g = lane / 4,
// t = lane % 4), and the host side of every launch (the device's shared-memory limit, alignment, head_dim dispatch).
// Guarantees: device functions are force-inlined and work on the caller's registers only (no shared memory, no
// synchronization beyond the warp shuffles named); the host helpers check every CUDA call.
#pragma once
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/cuda_check.hpp"
#include "core/error.hpp"

namespace ddpx::attention_common {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

__host__ __device__ constexpr int round_up(int v, int m) { return (v + m - 1) / m * m; }

// 2^x by the special-function unit alone (ex2.approx.ftz: about 2 ulp, results below 2^-126 flushed to zero, which
// a softmax weight that small is against a row maximum of 1). exp2f adds range scaling around the same
// instruction for subnormal results; in these kernels that was a quarter of the softmax's instructions.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// One online-softmax step over a chunk of NT 8-key score tiles starting at key k0, the scores raw (unscaled) as
// the Q K^T products left them: they become exp2(score * scale2 - running max), one FFMA and one exp2 each, the
// running max (log2 domain, scaled) and sum of each of the thread's two rows are updated (the max over the row's
// 4 lanes), and the output accumulators o are rescaled to the new max. Masked: keys from S on are masked (the
// chunk holding the sequence's end); the other chunks skip the per-score index test. scale2 must be positive (the
// max of the raw scores is then the max of the scaled ones): attention_tensor_core_supported and
// attention_tf32_supported ask.
template <bool Masked, int NT, int DT>
__device__ __forceinline__ void online_softmax_chunk(float (&sc)[NT][4], float (&o)[DT][4], float (&row_max)[2],
                                                     float (&row_sum)[2], int k0, int S, float scale2, int t) {
  float chunk_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if constexpr (Masked) {
        const int j = k0 + 8 * nt + 2 * t + (e & 1);
        if (j >= S) sc[nt][e] = -INFINITY;
      }
      chunk_max[e / 2] = fmaxf(chunk_max[e / 2], sc[nt][e]);
    }
  float correction[2], chunk_sum[2] = {0.f, 0.f}, neg_max[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    chunk_max[r] = fmaxf(chunk_max[r], __shfl_xor_sync(0xffffffffu, chunk_max[r], 1));
    chunk_max[r] = fmaxf(chunk_max[r], __shfl_xor_sync(0xffffffffu, chunk_max[r], 2));
    const float new_max = fmaxf(row_max[r], chunk_max[r] * scale2);  // finite: every chunk has a valid key
    correction[r] = fast_exp2(row_max[r] - new_max);                 // 0 at the first chunk (row_max -inf)
    row_max[r] = new_max;
    neg_max[r] = -new_max;
  }
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      sc[nt][e] = fast_exp2(fmaf(sc[nt][e], scale2, neg_max[e / 2]));  // masked: exp2(-inf) = 0
      chunk_sum[e / 2] += sc[nt][e];
    }
#pragma unroll
  for (int r = 0; r < 2; ++r) row_sum[r] = row_sum[r] * correction[r] + chunk_sum[r];
#pragma unroll
  for (int dt = 0; dt < DT; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) o[dt][e] *= correction[e / 2];
}

// The row sums of the forward's last step, completed over the row's 4 lanes.
__device__ __forceinline__ void reduce_row_sums(float (&row_sum)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 1);
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 2);
  }
}

// lse[row] = ln(sum exp(score)) for the thread's two rows (those below S), from the log2-domain max and sum.
__device__ __forceinline__ void store_lse(float* lse_head, const float (&row_max)[2], const float (&row_sum)[2],
                                          int first_row, int S, int g, int t) {
  if (t != 0) return;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = first_row + g + 8 * r;
    if (row < S) lse_head[row] = (row_max[r] + log2f(row_sum[r])) * kLn2;
  }
}

// acc[c] += sum over the tile's valid rows (r0 + g, r0 + g + 8 below `valid`) of column c of the C tiles.
template <int DT>
__device__ __forceinline__ void add_column_sums(float* acc, const float (&c)[DT][4], int r0, int valid, int g,
                                                int t) {
  const bool low = r0 + g < valid, high = r0 + g + 8 < valid;
#pragma unroll
  for (int dt = 0; dt < DT; ++dt)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      float v = (low ? c[dt][e] : 0.f) + (high ? c[dt][2 + e] : 0.f);
      v += __shfl_xor_sync(0xffffffffu, v, 4);
      v += __shfl_xor_sync(0xffffffffu, v, 8);
      v += __shfl_xor_sync(0xffffffffu, v, 16);
      if (g == 0) acc[8 * dt + 2 * t + e] += v;
    }
}

// The device's opt-in shared memory per block, asked once.
inline int max_shared_bytes() {
  static const int bytes = [] {
    int device = 0, value = 0;
    DDPX_CUDA_CHECK(cudaGetDevice(&device));
    DDPX_CUDA_CHECK(cudaDeviceGetAttribute(&value, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    return value;
  }();
  return bytes;
}

inline bool aligned16(const void* p) { return p == nullptr || reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// launch(std::integral_constant<int, HD>{}) for the head dims the tensor-core kernels are built for; `what`
// names the kernels in the error for any other.
template <typename Launch>
void dispatch_tensor_core_head_dim(int64_t head_dim, const char* what, Launch&& launch) {
  switch (head_dim) {
    case 32: launch(std::integral_constant<int, 32>{}); break;
    case 64: launch(std::integral_constant<int, 64>{}); break;
    case 80: launch(std::integral_constant<int, 80>{}); break;
    default: fail("{}: head_dim {} has no kernel (32, 64, 80)", what, head_dim);
  }
}

}  // namespace ddpx::attention_common
