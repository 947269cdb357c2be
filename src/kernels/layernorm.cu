// LayerNorm kernels; see layernorm.hpp. One warp per row, 16-byte vector loads.
// Rows of up to kMaxHeldChunks * 128 columns (ViT-B's 768, ViT-L's 1024) are held in registers: every load of a
// row is issued before the first reduction, so a row costs one trip to memory. Wider rows take the streaming
// kernels, which re-read the row from L1/L2 for each pass (mean, variance, output; the backward's two), so any
// width works. Both compute the same sums in the same order.
// Backward: a block handles kRowsPerBlock rows (one per warp); after the row pass it sums dy*xhat and dy of its
// rows per column (thread per column) into a partial row, and column_sum_add folds the partials in fixed order.
#include <cuda_bf16.h>

#include "core/error.hpp"
#include "core/cuda_check.hpp"
#include "kernels/column_sum.hpp"
#include "kernels/device_utils.cuh"
#include "kernels/layernorm.hpp"

namespace ddpx {
namespace {

using kernels::Float4;
using kernels::load4;
using kernels::store4;
using kernels::warp_sum;

constexpr int kRowsPerBlock = 8;  // = warps per block
constexpr int kThreads = 32 * kRowsPerBlock;
constexpr int kMaxHeldChunks = 8;  // 128-column chunks a warp holds in registers (32 floats a tensor per lane)

// Rows held in registers: a lane's columns are lane * 4 + 128 * k, k < kChunks, those below dim.
template <typename Out, int kChunks>
__global__ void layernorm_forward_held_kernel(LayerNormForwardArgs<Out> a) {
  const int lane = threadIdx.x % 32;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (row >= a.rows) return;
  const float* x = a.x + row * a.ld_x;
  const int dim = static_cast<int>(a.dim);
  Float4 v[kChunks];
#pragma unroll
  for (int k = 0; k < kChunks; ++k)
    if (lane * 4 + 128 * k < dim) v[k] = load4(x + lane * 4 + 128 * k);
  float sum = 0.f;
#pragma unroll
  for (int k = 0; k < kChunks; ++k)
    if (lane * 4 + 128 * k < dim) sum += (v[k].v[0] + v[k].v[1]) + (v[k].v[2] + v[k].v[3]);
  const float mean = warp_sum(sum) / dim;
  float sq = 0.f;
#pragma unroll
  for (int k = 0; k < kChunks; ++k)
    if (lane * 4 + 128 * k < dim) {
#pragma unroll
      for (int i = 0; i < 4; ++i) sq += (v[k].v[i] - mean) * (v[k].v[i] - mean);
    }
  const float rstd = rsqrtf(warp_sum(sq) / dim + a.eps);
  Out* y = a.y + row * a.ld_y;
#pragma unroll
  for (int k = 0; k < kChunks; ++k) {
    const int c = lane * 4 + 128 * k;
    if (c >= dim) break;
    Float4 g = load4(a.gamma + c), b = load4(a.beta + c), o;
#pragma unroll
    for (int i = 0; i < 4; ++i) o.v[i] = (v[k].v[i] - mean) * rstd * g.v[i] + b.v[i];
    store4(y + c, o);
  }
  if (lane == 0) {
    a.mean[row] = mean;
    a.rstd[row] = rstd;
  }
}

template <typename Out>
__global__ void layernorm_forward_streaming_kernel(LayerNormForwardArgs<Out> a) {
  const int lane = threadIdx.x % 32;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (row >= a.rows) return;
  const float* x = a.x + row * a.ld_x;
  const int dim = static_cast<int>(a.dim);
  float sum = 0.f;
#pragma unroll 4
  for (int c = lane * 4; c < dim; c += 128) {
    Float4 v = load4(x + c);
    sum += (v.v[0] + v.v[1]) + (v.v[2] + v.v[3]);
  }
  const float mean = warp_sum(sum) / dim;
  float sq = 0.f;
#pragma unroll 4
  for (int c = lane * 4; c < dim; c += 128) {
    Float4 v = load4(x + c);
#pragma unroll
    for (int i = 0; i < 4; ++i) sq += (v.v[i] - mean) * (v.v[i] - mean);
  }
  const float rstd = rsqrtf(warp_sum(sq) / dim + a.eps);
  Out* y = a.y + row * a.ld_y;
#pragma unroll 4
  for (int c = lane * 4; c < dim; c += 128) {
    Float4 v = load4(x + c), g = load4(a.gamma + c), b = load4(a.beta + c), o;
#pragma unroll
    for (int i = 0; i < 4; ++i) o.v[i] = (v.v[i] - mean) * rstd * g.v[i] + b.v[i];
    store4(y + c, o);
  }
  if (lane == 0) {
    a.mean[row] = mean;
    a.rstd[row] = rstd;
  }
}

// The block's rows summed per column, 4 adjacent columns per thread, rows in order; the rows' statistics are
// read once, and every row's loads of a column group are independent, so they are in flight together (a loop
// that stopped at the last row read them one after another: 16.5 us a call for ViT-L/32's 1600 x 1024).
// Called by every thread of the block once its dx rows are written and visible (after __syncthreads).
template <typename Out>
__device__ __forceinline__ void column_partials(const LayerNormBackwardArgs<Out>& a, int64_t first_row) {
  const int dim = static_cast<int>(a.dim);
  const int sums = a.dx_column_sum ? 3 : 2;
  float* partial = a.scratch + static_cast<int64_t>(blockIdx.x) * sums * dim;
  float row_mean[kRowsPerBlock], row_rstd[kRowsPerBlock];
#pragma unroll
  for (int r = 0; r < kRowsPerBlock; ++r) {
    const bool valid = first_row + r < a.rows;
    row_mean[r] = valid ? a.mean[first_row + r] : 0.f;
    row_rstd[r] = valid ? a.rstd[first_row + r] : 0.f;
  }
  for (int c = threadIdx.x * 4; c < dim; c += blockDim.x * 4) {
    Float4 dgamma{{0.f, 0.f, 0.f, 0.f}}, dbeta{{0.f, 0.f, 0.f, 0.f}}, dx_sum{{0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int r = 0; r < kRowsPerBlock; ++r) {
      const int64_t rr = first_row + r;
      if (rr >= a.rows) continue;
      const Float4 d = load4(a.dy + rr * a.ld_dy + c), xv = load4(a.x + rr * a.ld_x + c);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        dgamma.v[i] += d.v[i] * (xv.v[i] - row_mean[r]) * row_rstd[r];
        dbeta.v[i] += d.v[i];
      }
      if (a.dx_column_sum) {
        const Float4 dxv = load4(a.dx + rr * a.ld_dx + c);
#pragma unroll
        for (int i = 0; i < 4; ++i) dx_sum.v[i] += dxv.v[i];
      }
    }
    store4(partial + c, dgamma);
    store4(partial + dim + c, dbeta);
    if (a.dx_column_sum) store4(partial + 2 * dim + c, dx_sum);
  }
}

template <typename Out>
__global__ void layernorm_backward_streaming_kernel(LayerNormBackwardArgs<Out> a) {
  const int lane = threadIdx.x % 32;
  const int dim = static_cast<int>(a.dim);
  const int64_t first_row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock;
  const int64_t row = first_row + threadIdx.x / 32;
  if (row < a.rows) {
    const float* x = a.x + row * a.ld_x;
    const float* dy = a.dy + row * a.ld_dy;
    const float mean = a.mean[row], rstd = a.rstd[row];
    float sum_g = 0.f, sum_gx = 0.f;
#pragma unroll 4
    for (int c = lane * 4; c < dim; c += 128) {
      Float4 xv = load4(x + c), dv = load4(dy + c), gv = load4(a.gamma + c);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        float g = dv.v[i] * gv.v[i];
        sum_g += g;
        sum_gx += g * (xv.v[i] - mean) * rstd;
      }
    }
    sum_g = warp_sum(sum_g) / dim;
    sum_gx = warp_sum(sum_gx) / dim;
    float* dx = a.dx + row * a.ld_dx;
#pragma unroll 4
    for (int c = lane * 4; c < dim; c += 128) {
      Float4 xv = load4(x + c), dv = load4(dy + c), gv = load4(a.gamma + c);
      Float4 out = a.accumulate ? load4(dx + c) : Float4{{0.f, 0.f, 0.f, 0.f}};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        float xhat = (xv.v[i] - mean) * rstd;
        out.v[i] += rstd * (dv.v[i] * gv.v[i] - sum_g - xhat * sum_gx);
      }
      store4(dx + c, out);
      if (a.dx_copy) store4(a.dx_copy + row * a.ld_dx + c, out);
    }
  }
  __syncthreads();  // this block's dx rows are written (and visible to the whole block)
  column_partials(a, first_row);
}

// Rows held in registers (x, dy and the old dx, loaded together); the same sums in the same order as the
// streaming kernel.
template <typename Out, int kChunks>
__global__ void layernorm_backward_held_kernel(LayerNormBackwardArgs<Out> a) {
  const int lane = threadIdx.x % 32;
  const int dim = static_cast<int>(a.dim);
  const int64_t first_row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock;
  const int64_t row = first_row + threadIdx.x / 32;
  if (row < a.rows) {
    const float* x = a.x + row * a.ld_x;
    const float* dy = a.dy + row * a.ld_dy;
    float* dx = a.dx + row * a.ld_dx;
    Float4 xv[kChunks], dv[kChunks], old[kChunks];
#pragma unroll
    for (int k = 0; k < kChunks; ++k) {
      const int c = lane * 4 + 128 * k;
      if (c >= dim) break;
      xv[k] = load4(x + c), dv[k] = load4(dy + c);
      old[k] = a.accumulate ? load4(dx + c) : Float4{{0.f, 0.f, 0.f, 0.f}};
    }
    const float mean = a.mean[row], rstd = a.rstd[row];
    float sum_g = 0.f, sum_gx = 0.f;
#pragma unroll
    for (int k = 0; k < kChunks; ++k) {
      const int c = lane * 4 + 128 * k;
      if (c >= dim) break;
      const Float4 gv = load4(a.gamma + c);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        float g = dv[k].v[i] * gv.v[i];
        sum_g += g;
        sum_gx += g * (xv[k].v[i] - mean) * rstd;
      }
    }
    sum_g = warp_sum(sum_g) / dim;
    sum_gx = warp_sum(sum_gx) / dim;
#pragma unroll
    for (int k = 0; k < kChunks; ++k) {
      const int c = lane * 4 + 128 * k;
      if (c >= dim) break;
      const Float4 gv = load4(a.gamma + c);
      Float4 out = old[k];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        float xhat = (xv[k].v[i] - mean) * rstd;
        out.v[i] += rstd * (dv[k].v[i] * gv.v[i] - sum_g - xhat * sum_gx);
      }
      store4(dx + c, out);
      if (a.dx_copy) store4(a.dx_copy + row * a.ld_dx + c, out);
    }
  }
  __syncthreads();  // this block's dx rows are written (and visible to the whole block)
  column_partials(a, first_row);
}

// The held kernel's chunk count for a width: the next of 1, 2, 4, 8 at or above dim / 128; 0 = stream.
int held_chunks(int64_t dim) {
  const int64_t chunks = (dim + 127) / 128;
  for (int held = 1; held <= kMaxHeldChunks; held *= 2)
    if (chunks <= held) return held;
  return 0;
}

int64_t backward_blocks(int64_t rows) { return (rows + kRowsPerBlock - 1) / kRowsPerBlock; }

void check_shape(int64_t rows, int64_t dim, std::initializer_list<int64_t> lds, const char* what) {
  DDPX_REQUIRE(rows > 0 && dim > 0 && dim % 4 == 0, "{}: dim {} must be a positive multiple of 4 (rows {})", what,
               dim, rows);
  for (int64_t ld : lds)
    DDPX_REQUIRE(ld % 4 == 0 && ld >= dim, "{}: leading dimension {} must be a multiple of 4 and >= dim {}", what,
                 ld, dim);
}

}  // namespace

size_t layernorm_backward_scratch_floats(int64_t rows, int64_t dim) {
  return static_cast<size_t>(backward_blocks(rows) * 3 * dim) + column_sum_scratch_floats(3 * dim);
}

template <typename Out>
void layernorm_forward(const LayerNormForwardArgs<Out>& a, cudaStream_t stream) {
  check_shape(a.rows, a.dim, {a.ld_x, a.ld_y}, "layernorm_forward");
  const auto blocks = static_cast<unsigned>(backward_blocks(a.rows));
  switch (held_chunks(a.dim)) {
    case 1: layernorm_forward_held_kernel<Out, 1><<<blocks, kThreads, 0, stream>>>(a); break;
    case 2: layernorm_forward_held_kernel<Out, 2><<<blocks, kThreads, 0, stream>>>(a); break;
    case 4: layernorm_forward_held_kernel<Out, 4><<<blocks, kThreads, 0, stream>>>(a); break;
    case 8: layernorm_forward_held_kernel<Out, 8><<<blocks, kThreads, 0, stream>>>(a); break;
    default: layernorm_forward_streaming_kernel<Out><<<blocks, kThreads, 0, stream>>>(a);
  }
  DDPX_CHECK_LAUNCH("layernorm_forward_kernel");
}

template <typename Out>
void layernorm_backward(const LayerNormBackwardArgs<Out>& a, cudaStream_t stream) {
  check_shape(a.rows, a.dim, {a.ld_x, a.ld_dy, a.ld_dx}, "layernorm_backward");
  DDPX_REQUIRE(a.scratch_floats >= layernorm_backward_scratch_floats(a.rows, a.dim),
               "layernorm_backward: scratch of {} floats, needs {}", a.scratch_floats,
               layernorm_backward_scratch_floats(a.rows, a.dim));
  const int64_t blocks = backward_blocks(a.rows);
  const auto grid = static_cast<unsigned>(blocks);
  switch (held_chunks(a.dim)) {
    case 1: layernorm_backward_held_kernel<Out, 1><<<grid, kThreads, 0, stream>>>(a); break;
    case 2: layernorm_backward_held_kernel<Out, 2><<<grid, kThreads, 0, stream>>>(a); break;
    case 4: layernorm_backward_held_kernel<Out, 4><<<grid, kThreads, 0, stream>>>(a); break;
    case 8: layernorm_backward_held_kernel<Out, 8><<<grid, kThreads, 0, stream>>>(a); break;
    default: layernorm_backward_streaming_kernel<Out><<<grid, kThreads, 0, stream>>>(a);
  }
  DDPX_CHECK_LAUNCH("layernorm_backward_kernel");
  const int64_t sums = a.dx_column_sum ? 3 : 2;
  const size_t partial_floats = static_cast<size_t>(blocks * sums * a.dim);
  ColumnSumArgs<float> sum;
  sum.in = a.scratch;
  sum.ld = sums * a.dim;
  sum.rows = blocks;
  sum.cols = sums * a.dim;
  sum.segment = a.dim;
  sum.outputs[0] = a.dgamma;
  sum.outputs[1] = a.dbeta;
  sum.outputs[2] = a.dx_column_sum;
  sum.overwrite = a.overwrite_param_grads;
  sum.scratch = a.scratch + partial_floats;
  sum.scratch_floats = a.scratch_floats - partial_floats;
  column_sum_add(sum, stream);
}

template void layernorm_forward<float>(const LayerNormForwardArgs<float>&, cudaStream_t);
template void layernorm_forward<__nv_bfloat16>(const LayerNormForwardArgs<__nv_bfloat16>&, cudaStream_t);
template void layernorm_backward<float>(const LayerNormBackwardArgs<float>&, cudaStream_t);
template void layernorm_backward<__nv_bfloat16>(const LayerNormBackwardArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace ddpx
