// LayerNorm kernels; see layernorm.hpp. One warp per row, 16-byte vector loads.
// Rows of up to kMaxHeldChunks * 128 columns (ViT-B's 768, ViT-L's 1024) are held in registers: every load of a
// row is issued before the first reduction, so a row costs one trip to memory. Wider rows take the streaming
// kernels, which re-read the row from L1/L2 for each pass (mean, variance, output; the backward's two), so any
// width works. One kernel template serves both (kChunks = 0 streams); both compute the same sums in the same order.
// Backward: up to one wave of 16-row blocks, a block handles backward_rows_per_block(rows) rows (one per warp);
// after the row pass it sums dy*xhat and dy of its rows per column (thread per column) into a partial row. Past one
// wave, held widths take layernorm_backward_many_rows_kernel: kManyRowBlocks blocks of contiguous row runs whose
// warps add the column terms as the row pass writes dx. column_sum_add folds the partial rows in fixed order.
#include <cuda_bf16.h>

#include <algorithm>
#include <type_traits>

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "core/kernel_launch.cuh"
#include "kernels/column_sum.hpp"
#include "kernels/device_utils.cuh"
#include "kernels/layernorm.hpp"

namespace ddpx {
namespace {

using kernels::Float4;
using kernels::load4;
using kernels::store4;
using kernels::warp_sum;

constexpr int kRowsPerBlock = 8;  // = warps per block: the forward's, and the backward's for many rows
constexpr int kThreads = 32 * kRowsPerBlock;
// The backward spreads up to kWaveBlocks * kMaxRowsPerBlock rows evenly over at most kWaveBlocks blocks, one wave
// at one block per SM on an H100 or H200 (ViT-L/32's 1,600 rows: 124 blocks of 13, where 200 blocks of 8 left 68
// SMs with two blocks and 64 with one). The reference SM count rather than the device's, so the partial sums and
// their bits are the same on every GPU.
constexpr int kWaveBlocks = kernels::kReferenceSms;
constexpr int kMaxRowsPerBlock = 16;
constexpr int kManyRowBlocks = 2 * kWaveBlocks;  // layernorm_backward_many_rows_kernel: two blocks per SM
constexpr int kMaxHeldChunks = 8;  // 128-column chunks a warp holds in registers (32 floats a tensor per lane)

// The first column of a lane's k-th 4-column vector in a held row: the row's 128-column chunk k, 4 columns a lane.
__device__ __forceinline__ int held_column(int lane, int k) { return lane * 4 + 128 * k; }

// The row pass of the forward for one row, by one warp. kChunks > 0: the row held in registers, a lane's columns
// held_column(lane, k) (k < kChunks, those below dim); kChunks == 0: streamed, re-read for each of the three passes.
template <typename Out, int kChunks>
__device__ __forceinline__ void forward_row(const LayerNormForwardArgs<Out>& a, int64_t row, int lane) {
  const float* x = a.x + row * a.ld_x;
  const int dim = static_cast<int>(a.dim);
  constexpr int kHeld = kChunks > 0 ? kChunks : 1;
  Float4 v[kHeld];
  float sum = 0.f;
  if constexpr (kChunks > 0) {
#pragma unroll
    for (int k = 0; k < kChunks; ++k)
      if (held_column(lane, k) < dim) v[k] = load4(x + held_column(lane, k));
#pragma unroll
    for (int k = 0; k < kChunks; ++k)
      if (held_column(lane, k) < dim) sum += (v[k].v[0] + v[k].v[1]) + (v[k].v[2] + v[k].v[3]);
  } else {
#pragma unroll 4
    for (int c = lane * 4; c < dim; c += 128) {
      const Float4 w = load4(x + c);
      sum += (w.v[0] + w.v[1]) + (w.v[2] + w.v[3]);
    }
  }
  const float mean = warp_sum(sum) / dim;
  float sq = 0.f;
  if constexpr (kChunks > 0) {
#pragma unroll
    for (int k = 0; k < kChunks; ++k)
      if (held_column(lane, k) < dim) {
#pragma unroll
        for (int i = 0; i < 4; ++i) sq += (v[k].v[i] - mean) * (v[k].v[i] - mean);
      }
  } else {
#pragma unroll 4
    for (int c = lane * 4; c < dim; c += 128) {
      const Float4 w = load4(x + c);
#pragma unroll
      for (int i = 0; i < 4; ++i) sq += (w.v[i] - mean) * (w.v[i] - mean);
    }
  }
  const float rstd = rsqrtf(warp_sum(sq) / dim + a.eps);
  Out* y = a.y + row * a.ld_y;
  auto write = [&](int c, const Float4& w) {
    const Float4 g = load4(a.gamma + c), b = load4(a.beta + c);
    Float4 o;
#pragma unroll
    for (int i = 0; i < 4; ++i) o.v[i] = (w.v[i] - mean) * rstd * g.v[i] + b.v[i];
    store4(y + c, o);
  };
  if constexpr (kChunks > 0) {
#pragma unroll
    for (int k = 0; k < kChunks; ++k)
      if (held_column(lane, k) < dim) write(held_column(lane, k), v[k]);
  } else {
#pragma unroll 4
    for (int c = lane * 4; c < dim; c += 128) write(c, load4(x + c));
  }
  if (lane == 0) {
    a.mean[row] = mean;
    a.rstd[row] = rstd;
  }
}

template <typename Out, int kChunks>
__global__ void layernorm_forward_kernel(LayerNormForwardArgs<Out> a) {
  begin_after_producer();
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (row < a.rows) forward_row<Out, kChunks>(a, row, threadIdx.x % 32);
}

// The row pass of the backward for one row, by one warp: dx = (accumulate ? dx : 0) + dLN/dx and its Out copy.
// kChunks as in forward_row (held: x, dy and the old dx loaded together); the same sums in the same order.
// kSumColumns (held rows only): also adds the row's dy * xhat, dy and new dx to the warp's column sums `sums`
// (dgamma at [0, dim), dbeta at [dim, 2 dim), dx at [2 dim, 3 dim), shared memory); each lane owns its columns.
template <typename Out, int kChunks, bool kSumColumns = false>
__device__ __forceinline__ void backward_row(const LayerNormBackwardArgs<Out>& a, int64_t row, int lane,
                                             float* sums = nullptr) {
  static_assert(!kSumColumns || kChunks > 0, "column sums in the row pass need the row held");
  const float* x = a.x + row * a.ld_x;
  const Out* dy = a.dy + row * a.ld_dy;
  float* dx = a.dx + row * a.ld_dx;
  const int dim = static_cast<int>(a.dim);
  const float mean = a.mean[row], rstd = a.rstd[row];
  constexpr int kHeld = kChunks > 0 ? kChunks : 1;
  Float4 xv[kHeld], dv[kHeld], old[kHeld];
  if constexpr (kChunks > 0) {
#pragma unroll
    for (int k = 0; k < kChunks; ++k) {
      const int c = held_column(lane, k);
      if (c >= dim) break;
      xv[k] = load4(x + c), dv[k] = load4(dy + c);
      old[k] = a.accumulate ? load4(dx + c) : Float4{{0.f, 0.f, 0.f, 0.f}};
    }
  }
  float sum_g = 0.f, sum_gx = 0.f;
  auto add_sums = [&](int c, const Float4& xw, const Float4& dw) {
    const Float4 gv = load4(a.gamma + c);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float g = dw.v[i] * gv.v[i];
      sum_g += g;
      sum_gx += g * (xw.v[i] - mean) * rstd;
    }
  };
  if constexpr (kChunks > 0) {
#pragma unroll
    for (int k = 0; k < kChunks; ++k)
      if (held_column(lane, k) < dim) add_sums(held_column(lane, k), xv[k], dv[k]);
  } else {
#pragma unroll 4
    for (int c = lane * 4; c < dim; c += 128) add_sums(c, load4(x + c), load4(dy + c));
  }
  sum_g = warp_sum(sum_g) / dim;
  sum_gx = warp_sum(sum_gx) / dim;
  auto write = [&](int c, const Float4& xw, const Float4& dw, Float4 out) {
    const Float4 gv = load4(a.gamma + c);
    Float4 xhat;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      xhat.v[i] = (xw.v[i] - mean) * rstd;
      out.v[i] += rstd * (dw.v[i] * gv.v[i] - sum_g - xhat.v[i] * sum_gx);
    }
    store4(dx + c, out);
    if (a.dx_copy) store4(a.dx_copy + row * a.ld_dx + c, out);
    if constexpr (kSumColumns) {
      Float4 dgamma = load4(sums + c), dbeta = load4(sums + dim + c);
#pragma unroll
      for (int i = 0; i < 4; ++i) dgamma.v[i] += dw.v[i] * xhat.v[i], dbeta.v[i] += dw.v[i];
      store4(sums + c, dgamma);
      store4(sums + dim + c, dbeta);
      if (a.dx_column_sum) {
        Float4 dx_sum = load4(sums + 2 * dim + c);
#pragma unroll
        for (int i = 0; i < 4; ++i) dx_sum.v[i] += out.v[i];
        store4(sums + 2 * dim + c, dx_sum);
      }
    }
  };
  if constexpr (kChunks > 0) {
#pragma unroll
    for (int k = 0; k < kChunks; ++k)
      if (held_column(lane, k) < dim) write(held_column(lane, k), xv[k], dv[k], old[k]);
  } else {
#pragma unroll 4
    for (int c = lane * 4; c < dim; c += 128)
      write(c, load4(x + c), load4(dy + c), a.accumulate ? load4(dx + c) : Float4{{0.f, 0.f, 0.f, 0.f}});
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
  const int rows_here = static_cast<int>(blockDim.x / 32);
  float row_mean[kMaxRowsPerBlock], row_rstd[kMaxRowsPerBlock];
#pragma unroll
  for (int r = 0; r < kMaxRowsPerBlock; ++r) {
    const bool valid = r < rows_here && first_row + r < a.rows;
    row_mean[r] = valid ? a.mean[first_row + r] : 0.f;
    row_rstd[r] = valid ? a.rstd[first_row + r] : 0.f;
  }
  for (int c = threadIdx.x * 4; c < dim; c += blockDim.x * 4) {
    Float4 dgamma{{0.f, 0.f, 0.f, 0.f}}, dbeta{{0.f, 0.f, 0.f, 0.f}}, dx_sum{{0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int r = 0; r < kMaxRowsPerBlock; ++r) {
      const int64_t rr = first_row + r;
      if (r >= rows_here || rr >= a.rows) break;
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

// One warp per row, blockDim.x / 32 = backward_rows_per_block(a.rows) rows per block.
template <typename Out, int kChunks>
__global__ void __launch_bounds__(32 * kMaxRowsPerBlock) layernorm_backward_kernel(LayerNormBackwardArgs<Out> a) {
  begin_after_producer();
  const int64_t first_row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32);
  const int64_t row = first_row + threadIdx.x / 32;
  if (row < a.rows) backward_row<Out, kChunks>(a, row, threadIdx.x % 32);
  __syncthreads();  // this block's dx rows are written (and visible to the whole block)
  column_partials(a, first_row);
}

// Past one wave of kMaxRowsPerBlock-row blocks (ViT-B/16 at batch 256: 50,432 rows): kManyRowBlocks blocks, each
// a contiguous run of rows, its warps taking every kRowsPerBlock-th row of the run and adding each row's column
// terms to the warp's own sums in shared memory as the row pass writes dx (no second read of the rows, no
// atomics); the block then adds its warps' sums in warp order into its one partial row. Rows held in registers
// only (dim <= kMaxHeldChunks * 128). The run of a block depends on rows alone, so the sums' order, and their
// bits, are the same on every GPU. Measured on the H200 for ViT-B/16 (bench/row_kernel_timing, docs/results.md):
// 8-row blocks wrote and re-read a partial row per 8 rows and read each block's rows twice.
template <typename Out, int kChunks>
__global__ void __launch_bounds__(kThreads, 2) layernorm_backward_many_rows_kernel(LayerNormBackwardArgs<Out> a) {
  extern __shared__ float4 shared_sums[];  // [kRowsPerBlock][3][dim]
  const int dim = static_cast<int>(a.dim);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* sums = reinterpret_cast<float*>(shared_sums);
  float* warp_sums = sums + warp * 3 * dim;
  for (int c = lane * 4; c < 3 * dim; c += 128) store4(warp_sums + c, Float4{{0.f, 0.f, 0.f, 0.f}});
  __syncwarp();
  begin_after_producer();
  const int64_t first = a.rows * blockIdx.x / gridDim.x, end = a.rows * (blockIdx.x + 1) / gridDim.x;
  for (int64_t row = first + warp; row < end; row += kRowsPerBlock)
    backward_row<Out, kChunks, true>(a, row, lane, warp_sums);
  __syncthreads();
  const int partial_floats = (a.dx_column_sum ? 3 : 2) * dim;
  float* partial = a.scratch + static_cast<int64_t>(blockIdx.x) * partial_floats;
  for (int c = threadIdx.x * 4; c < partial_floats; c += blockDim.x * 4) {
    Float4 total{{0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int w = 0; w < kRowsPerBlock; ++w) {
      const Float4 v = load4(sums + w * 3 * dim + c);
#pragma unroll
      for (int i = 0; i < 4; ++i) total.v[i] += v.v[i];
    }
    store4(partial + c, total);
  }
}

// Calls launch(std::integral_constant<int, N>) with N the held chunk count for width dim (the next of 1, 2, 4, 8
// at or above dim / 128), or N = 0 (streamed) past kMaxHeldChunks * 128 columns.
template <typename Launch>
void by_width(int64_t dim, Launch&& launch) {
  const int64_t chunks = (dim + 127) / 128;
  if (chunks <= 1) return launch(std::integral_constant<int, 1>{});
  if (chunks <= 2) return launch(std::integral_constant<int, 2>{});
  if (chunks <= 4) return launch(std::integral_constant<int, 4>{});
  if (chunks <= kMaxHeldChunks) return launch(std::integral_constant<int, kMaxHeldChunks>{});
  launch(std::integral_constant<int, 0>{});
}

int64_t forward_blocks(int64_t rows) { return (rows + kRowsPerBlock - 1) / kRowsPerBlock; }

// Rows per backward block: rows / kWaveBlocks rounded up while that is at most kMaxRowsPerBlock (one wave, every
// block within one row of the others), else kRowsPerBlock (many waves balance themselves).
int backward_rows_per_block(int64_t rows) {
  const int64_t spread = (rows + kWaveBlocks - 1) / kWaveBlocks;
  return spread <= kMaxRowsPerBlock ? static_cast<int>(std::max<int64_t>(1, spread)) : kRowsPerBlock;
}

// Whether the backward takes layernorm_backward_many_rows_kernel: more rows than one wave of the largest blocks,
// held in registers.
bool backward_many_rows(int64_t rows, int64_t dim) {
  return rows > static_cast<int64_t>(kWaveBlocks) * kMaxRowsPerBlock && dim <= kMaxHeldChunks * 128;
}

// Blocks of the backward's row pass, one partial row of column sums each.
int64_t backward_blocks(int64_t rows, int64_t dim) {
  if (backward_many_rows(rows, dim)) return kManyRowBlocks;
  const int per_block = backward_rows_per_block(rows);
  return (rows + per_block - 1) / per_block;
}

void check_shape(int64_t rows, int64_t dim, std::initializer_list<int64_t> lds, const char* what) {
  DDPX_REQUIRE(rows > 0 && dim > 0 && dim % 4 == 0, "{}: dim {} must be a positive multiple of 4 (rows {})", what,
               dim, rows);
  for (int64_t ld : lds)
    DDPX_REQUIRE(ld % 4 == 0 && ld >= dim, "{}: leading dimension {} must be a multiple of 4 and >= dim {}", what,
                 ld, dim);
}

}  // namespace

size_t layernorm_backward_scratch_floats(int64_t rows, int64_t dim) {
  return static_cast<size_t>(backward_blocks(rows, dim) * 3 * dim) + column_sum_scratch_floats(3 * dim);
}

template <typename Out>
void layernorm_forward(const LayerNormForwardArgs<Out>& a, cudaStream_t stream) {
  check_shape(a.rows, a.dim, {a.ld_x, a.ld_y}, "layernorm_forward");
  const auto blocks = static_cast<unsigned>(forward_blocks(a.rows));
  by_width(a.dim, [&](auto chunks) {
    launch_after_producer("layernorm_forward_kernel", layernorm_forward_kernel<Out, decltype(chunks)::value>, blocks,
                          kThreads, 0, stream, a);
  });
}

template <typename Out>
void layernorm_backward(const LayerNormBackwardArgs<Out>& a, cudaStream_t stream) {
  check_shape(a.rows, a.dim, {a.ld_x, a.ld_dy, a.ld_dx}, "layernorm_backward");
  DDPX_REQUIRE(a.scratch_floats >= layernorm_backward_scratch_floats(a.rows, a.dim),
               "layernorm_backward: scratch of {} floats, needs {}", a.scratch_floats,
               layernorm_backward_scratch_floats(a.rows, a.dim));
  const int64_t blocks = backward_blocks(a.rows, a.dim);
  by_width(a.dim, [&](auto chunks) {
    constexpr int kChunks = decltype(chunks)::value;
    if constexpr (kChunks > 0) {
      if (backward_many_rows(a.rows, a.dim)) {
        const size_t shared = sizeof(float) * kRowsPerBlock * 3 * static_cast<size_t>(a.dim);
        auto kernel = layernorm_backward_many_rows_kernel<Out, kChunks>;
        allow_dynamic_shared(kernel, shared);
        launch_after_producer("layernorm_backward_many_rows_kernel", kernel, static_cast<unsigned>(blocks),
                              kThreads, shared, stream, a);
        return;
      }
    }
    launch_after_producer("layernorm_backward_kernel", layernorm_backward_kernel<Out, kChunks>,
                          static_cast<unsigned>(blocks), 32 * backward_rows_per_block(a.rows), 0, stream, a);
  });
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
  if (a.fold_into) a.fold_into->add(sum);
  else column_sum_add(sum, stream);
}

template void layernorm_forward<float>(const LayerNormForwardArgs<float>&, cudaStream_t);
template void layernorm_forward<__nv_bfloat16>(const LayerNormForwardArgs<__nv_bfloat16>&, cudaStream_t);
template void layernorm_backward<float>(const LayerNormBackwardArgs<float>&, cudaStream_t);
template void layernorm_backward<__nv_bfloat16>(const LayerNormBackwardArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace ddpx
