// Exact-GELU kernels; see gelu.hpp. Each thread issues all its loads (4-element vectors) before computing on them.
#include <cuda_bf16.h>

#include "core/error.hpp"
#include "core/cuda_check.hpp"
#include "kernels/column_sum.hpp"
#include "kernels/device_utils.cuh"
#include "kernels/gelu.hpp"

namespace ddpx {
namespace {

using kernels::Float4;
using kernels::load4;
using kernels::store4;

constexpr int kThreads = 256;
constexpr int64_t kRowsPerBlock = 8;  // 200 row blocks for 1600 tokens: enough loads in flight
constexpr int kVectorsPerThread = 4;  // forward: 4-element vectors a thread loads before it computes
constexpr int kRowsInFlight = 2;      // backward: rows a thread loads before it computes

__device__ __forceinline__ float gelu(float x) { return 0.5f * x * (1.f + erff(x * 0.70710678118654752f)); }
__device__ __forceinline__ float gelu_derivative(float x) {
  const float cdf = 0.5f * (1.f + erff(x * 0.70710678118654752f));
  const float pdf = 0.39894228040143268f * expf(-0.5f * x * x);
  return cdf + x * pdf;
}

// Each thread loads kVectorsPerThread vectors (a block's are kThreads apart: coalesced) before computing any: their
// loads are in flight together. A grid-stride loop of one vector at a time waited on each load in turn (12.1 us
// for ViT-L/32's 1600 x 4096 in bf16, 28% of DRAM bandwidth, on an H200).
template <typename T>
__global__ void gelu_forward_kernel(const T* x, T* out, int64_t vectors) {
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kThreads * kVectorsPerThread + threadIdx.x;
  Float4 in[kVectorsPerThread];
#pragma unroll
  for (int i = 0; i < kVectorsPerThread; ++i) {
    const int64_t v = first + i * kThreads;
    if (v < vectors) in[i] = load4(x + 4 * v);
  }
#pragma unroll
  for (int i = 0; i < kVectorsPerThread; ++i) {
    const int64_t v = first + i * kThreads;
    if (v >= vectors) break;
    Float4 o;
#pragma unroll
    for (int j = 0; j < 4; ++j) o.v[j] = gelu(in[i].v[j]);
    store4(out + 4 * v, o);
  }
}

// Block (blockIdx.x, blockIdx.y): columns [4 * kThreads * blockIdx.x, +4 * kThreads), rows
// [kRowsPerBlock * blockIdx.y, +kRowsPerBlock); each thread owns 4 adjacent columns and sums them over its rows,
// loading kRowsInFlight rows before it computes on them. Variants timed side by side on an H200 (1600 x 4096
// bf16, inputs not in L2, 2026-12-02): one row at a time 21.0 us, two 17.8, all eight 27.0 (95 registers: 2
// blocks per SM). It is as much bound by erff/expf issue as by memory: with its inputs in L2 it still took 16 us.
// bench/row_kernel_timing times it as it is.
template <typename T>
__global__ void gelu_backward_kernel(const T* x, T* grad, int64_t rows, int64_t cols, float* partial) {
  const int64_t col = 4 * (static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x);
  if (col >= cols) return;
  const int64_t first_row = static_cast<int64_t>(blockIdx.y) * kRowsPerBlock;
  const int row_count = static_cast<int>(min(rows - first_row, kRowsPerBlock));
  Float4 sum{{0.f, 0.f, 0.f, 0.f}};
  for (int r0 = 0; r0 < row_count; r0 += kRowsInFlight) {
    Float4 in[kRowsInFlight], g[kRowsInFlight];
#pragma unroll
    for (int j = 0; j < kRowsInFlight; ++j) {
      if (r0 + j >= row_count) break;
      const int64_t offset = (first_row + r0 + j) * cols + col;
      in[j] = load4(x + offset), g[j] = load4(grad + offset);
    }
#pragma unroll
    for (int j = 0; j < kRowsInFlight; ++j) {
      if (r0 + j >= row_count) break;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        g[j].v[i] *= gelu_derivative(in[j].v[i]);
        sum.v[i] += g[j].v[i];
      }
      store4(grad + (first_row + r0 + j) * cols + col, g[j]);
    }
  }
  if (partial) store4(partial + static_cast<int64_t>(blockIdx.y) * cols + col, sum);
}

}  // namespace

template <typename T>
void gelu_forward(const T* x, T* out, int64_t n, cudaStream_t stream) {
  DDPX_REQUIRE(n % 4 == 0, "gelu_forward: element count {} must be a multiple of 4", n);
  if (n == 0) return;
  const int64_t per_block = static_cast<int64_t>(kThreads) * kVectorsPerThread;
  const int64_t blocks = (n / 4 + per_block - 1) / per_block;
  DDPX_REQUIRE(blocks <= 0x7fffffff, "gelu_forward: {} elements exceed one launch's grid", n);
  gelu_forward_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, out, n / 4);
  DDPX_CHECK_LAUNCH("gelu_forward_kernel");
}

size_t gelu_backward_scratch_floats(int64_t rows, int64_t cols) {
  return static_cast<size_t>((rows + kRowsPerBlock - 1) / kRowsPerBlock * cols) + column_sum_scratch_floats(cols);
}

template <typename T>
void gelu_backward(const T* x, T* grad, int64_t rows, int64_t cols, float* bias_grad, float* scratch,
                   size_t scratch_floats, cudaStream_t stream, bool overwrite_bias_grad) {
  DDPX_REQUIRE(cols % 4 == 0, "gelu_backward: column count {} must be a multiple of 4", cols);
  if (rows == 0 || cols == 0) return;
  const int64_t row_blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  const size_t partial_floats = static_cast<size_t>(row_blocks * cols);
  if (bias_grad)
    DDPX_REQUIRE(scratch && scratch_floats >= gelu_backward_scratch_floats(rows, cols),
                 "gelu_backward: scratch of {} floats, needs {}", scratch_floats,
                 gelu_backward_scratch_floats(rows, cols));
  const dim3 grid(static_cast<unsigned>((cols / 4 + kThreads - 1) / kThreads), static_cast<unsigned>(row_blocks));
  gelu_backward_kernel<T><<<grid, kThreads, 0, stream>>>(x, grad, rows, cols, bias_grad ? scratch : nullptr);
  DDPX_CHECK_LAUNCH("gelu_backward_kernel");
  if (!bias_grad) return;
  ColumnSumArgs<float> sum;
  sum.in = scratch, sum.ld = cols, sum.rows = row_blocks, sum.cols = cols;
  sum.outputs[0] = bias_grad;
  sum.overwrite = overwrite_bias_grad;
  sum.scratch = scratch + partial_floats, sum.scratch_floats = scratch_floats - partial_floats;
  column_sum_add(sum, stream);
}

template void gelu_forward<float>(const float*, float*, int64_t, cudaStream_t);
template void gelu_forward<__nv_bfloat16>(const __nv_bfloat16*, __nv_bfloat16*, int64_t, cudaStream_t);
template void gelu_backward<float>(const float*, float*, int64_t, int64_t, float*, float*, size_t, cudaStream_t,
                                  bool);
template void gelu_backward<__nv_bfloat16>(const __nv_bfloat16*, __nv_bfloat16*, int64_t, int64_t, float*, float*,
                                           size_t, cudaStream_t, bool);

}  // namespace ddpx
