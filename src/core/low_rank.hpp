// Low-rank gradients: how a PowerSGD bucket's averaged gradients are described when the hook leaves them as
// factors instead of writing P Q^T into the bucket (Note [Low-rank gradients fused into the update],
// ddp/comm_hook.hpp), and the one function that evaluates a factor product at an element. The hook's finish
// kernel (ddp/powersgd_math_cuda.cu, which writes E = M - P Q^T) and the optimizer's kernels (kernels/optimizer.cu,
// which read the gradient) both call low_rank_product, so the update sees the bits the bucket would have held.
// Guarantees: plain structs (C++17, host and device); the device functions (load_factor_row, low_rank_product)
// exist for CUDA translation units only.
#pragma once
#include <cstdint>

namespace ddpx {

// Elements [offset, offset + numel) of a span, offset counted from the span's first element (both multiples of
// 4). A factor piece (rank > 0) holds (P Q^T)[e / cols][e % cols] for e = element - offset, with P [numel / cols,
// rank] row-major at p_offset and Q [cols, rank] row-major at q_offset floats into the factor buffers; a plain
// piece (rank 0) holds its gradients where the fp32 gradient buffer has them.
struct LowRankPiece {
  long long offset = 0, numel = 0;
  int cols = 0, rank = 0;
  long long p_offset = 0, q_offset = 0;
};

struct LowRankGradients {
  const LowRankPiece* pieces = nullptr;  // device memory, `count` pieces covering the span in order
  int count = 0;
  const float* p = nullptr;  // device: the averaged, orthogonalized P factors
  const float* q = nullptr;  // device: the averaged Q factors
  int width = 0;             // 1, 2, 4 or 8, at least every piece's rank: the K of low_rank_product
};

#ifdef __CUDACC__
// Columns [col0, col0 + count) of row `row` of a [*, rank] row-major factor into K registers, zero beyond count:
// as float4 loads when the K values are one 16-byte aligned run (factor buffers start aligned, so every rank that
// is a multiple of 4 takes this path), one by one otherwise. Read-only loads: the factor must not change during
// the kernel.
template <int K>
__device__ __forceinline__ void load_factor_row(const float* factor, long long row, int rank, int col0, int count,
                                                float (&out)[K]) {
  const float* p = factor + row * rank + col0;
  if constexpr (K % 4 == 0) {
    if (count == K && (reinterpret_cast<uintptr_t>(p) & 15) == 0) {
#pragma unroll
      for (int r4 = 0; r4 < K / 4; ++r4) {
        const float4 v = __ldg(reinterpret_cast<const float4*>(p) + r4);
        out[4 * r4] = v.x, out[4 * r4 + 1] = v.y, out[4 * r4 + 2] = v.z, out[4 * r4 + 3] = v.w;
      }
      return;
    }
  }
#pragma unroll
  for (int r = 0; r < K; ++r) out[r] = r < count ? __ldg(p + r) : 0.0f;
}

// sum over r < K of p[r] * q[r] as K fused multiply-adds in order, from 0 (entries beyond a factor's rank are 0).
template <int K>
__device__ __forceinline__ float low_rank_product(const float (&p)[K], const float (&q)[K]) {
  float sum = 0.f;
#pragma unroll
  for (int r = 0; r < K; ++r) sum = __fmaf_rn(p[r], q[r], sum);
  return sum;
}
#endif

}  // namespace ddpx
