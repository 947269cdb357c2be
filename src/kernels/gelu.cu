// Exact-GELU kernels; see gelu.hpp. Grid-stride loops over 4-element vectors.
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

__device__ __forceinline__ float gelu(float x) { return 0.5f * x * (1.f + erff(x * 0.70710678118654752f)); }
__device__ __forceinline__ float gelu_derivative(float x) {
  const float cdf = 0.5f * (1.f + erff(x * 0.70710678118654752f));
  const float pdf = 0.39894228040143268f * expf(-0.5f * x * x);
  return cdf + x * pdf;
}

template <typename T>
__global__ void gelu_forward_kernel(const T* x, T* out, int64_t vectors) {
  for (int64_t v = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; v < vectors;
       v += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    Float4 in = load4(x + 4 * v), o;
#pragma unroll
    for (int i = 0; i < 4; ++i) o.v[i] = gelu(in.v[i]);
    store4(out + 4 * v, o);
  }
}

// Block (blockIdx.x, blockIdx.y): columns [4 * kThreads * blockIdx.x, +4 * kThreads), rows
// [kRowsPerBlock * blockIdx.y, +kRowsPerBlock); each thread owns 4 adjacent columns and sums them over its rows.
template <typename T>
__global__ void gelu_backward_kernel(const T* x, T* grad, int64_t rows, int64_t cols, float* partial) {
  const int64_t col = 4 * (static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x);
  if (col >= cols) return;
  const int64_t first_row = static_cast<int64_t>(blockIdx.y) * kRowsPerBlock;
  const int64_t last_row = min(rows, first_row + kRowsPerBlock);
  Float4 sum{{0.f, 0.f, 0.f, 0.f}};
  for (int64_t r = first_row; r < last_row; ++r) {
    const int64_t offset = r * cols + col;
    Float4 in = load4(x + offset), g = load4(grad + offset);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      g.v[i] *= gelu_derivative(in.v[i]);
      sum.v[i] += g.v[i];
    }
    store4(grad + offset, g);
  }
  if (partial) store4(partial + static_cast<int64_t>(blockIdx.y) * cols + col, sum);
}

}  // namespace

template <typename T>
void gelu_forward(const T* x, T* out, int64_t n, cudaStream_t stream) {
  DDPX_REQUIRE(n % 4 == 0, "gelu_forward: element count {} must be a multiple of 4", n);
  if (n == 0) return;
  gelu_forward_kernel<T><<<kernels::elementwise_blocks(n / 4, kThreads), kThreads, 0, stream>>>(x, out, n / 4);
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
