// Deterministic two-stage column sums; see column_sum.hpp.
// Stage 1: block (32 columns x 32 row lanes) sums one row range ("split") of 32 columns; stage 2 adds the splits
// in order. With one split, stage 1 adds into the output directly. 32 row lanes keep a thread's chain of loads
// short: the sums are mostly of a few hundred partial rows (LayerNorm's, GELU's), where 8 lanes left each thread
// 25 loads deep and the kernel latency-bound (6.9 us a call on an H200, 101 calls in a ViT-L/32 step). Fewer
// than 128 rows use fewer row lanes (a power of two, about 8 rows each): the position-embedding gradient's 32 rows x
// 51,200 columns took 18.6 us as 1,600 blocks of 1,024 threads, each thread loading one value.
#include <cuda_bf16.h>

#include <algorithm>

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "core/kernel_launch.cuh"
#include "kernels/column_sum.hpp"
#include "kernels/device_utils.cuh"

namespace ddpx {
namespace {

constexpr int kColumnsPerBlock = 32;
constexpr int kRowLanes = 32;  // the most; row_lanes() picks fewer for short columns
// Stage 1 aims at two blocks per SM of the reference GPU; a constant, so the splits (and the bits) follow the shape.
constexpr int64_t kTargetBlocks = 2 * kernels::kReferenceSms;
constexpr int64_t kMinRowsPerSplit = 256;  // fewer rows stay one kernel (no second stage)

struct Outputs {
  float* vectors[kMaxColumnSumSegments];
  int64_t segment;
  bool overwrite;
};

__device__ __forceinline__ void add_to_output(const Outputs& o, int64_t col, float v) {
  const int64_t s = col / o.segment;
  float& out = o.vectors[s][col - s * o.segment];
  out = o.overwrite ? v : out + v;
}

template <typename In>
__global__ void column_sum_stage1(const In* in, int64_t ld, int64_t rows, int64_t cols, int64_t rows_per_split,
                                  float* partial, Outputs outputs) {
  __shared__ float sums[kRowLanes][kColumnsPerBlock + 1];
  begin_after_producer();
  const int lane = threadIdx.x, row_lane = threadIdx.y, row_lanes = blockDim.y;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kColumnsPerBlock + lane;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * rows_per_split;
  const int64_t end = min(rows, begin + rows_per_split);
  float acc = 0.f;
  if (col < cols) {
#pragma unroll 4
    for (int64_t r = begin + row_lane; r < end; r += row_lanes) acc += kernels::to_float(in[r * ld + col]);
  }
  sums[row_lane][lane] = acc;
  __syncthreads();
  if (row_lane == 0 && col < cols) {
    float total = 0.f;
#pragma unroll
    for (int i = 0; i < kRowLanes; ++i)
      if (i < row_lanes) total += sums[i][lane];
    if (partial) partial[static_cast<int64_t>(blockIdx.y) * cols + col] = total;
    else add_to_output(outputs, col, total);
  }
}

__global__ void column_sum_stage2(const float* partial, int64_t splits, int64_t cols, Outputs outputs) {
  begin_after_producer();
  const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= cols) return;
  float total = 0.f;
  for (int64_t s = 0; s < splits; ++s) total += partial[s * cols + col];
  add_to_output(outputs, col, total);
}

// Row lanes of a stage-1 block summing `rows` rows: 32, or for fewer than 128 rows the power of two nearest
// below rows / 8 (at least 1).
int row_lanes(int64_t rows) {
  if (rows >= 128) return kRowLanes;
  int lanes = 1;
  while (lanes * 2 * 8 <= rows) lanes *= 2;
  return lanes;
}

}  // namespace

size_t column_sum_scratch_floats(int64_t cols) {
  return static_cast<size_t>(kTargetBlocks * kColumnsPerBlock + cols);
}

template <typename In>
void column_sum_add(const ColumnSumArgs<In>& a, cudaStream_t stream) {
  if (a.rows <= 0 || a.cols <= 0) return;
  Outputs outputs{{}, a.segment < 0 ? a.cols : a.segment, a.overwrite};
  const int64_t segments = (a.cols + outputs.segment - 1) / outputs.segment;
  DDPX_REQUIRE(segments <= kMaxColumnSumSegments && a.cols % outputs.segment == 0,
               "column_sum_add: {} columns do not split into at most {} segments of {}", a.cols,
               kMaxColumnSumSegments, outputs.segment);
  for (int64_t s = 0; s < segments; ++s) {
    DDPX_REQUIRE(a.outputs[s] != nullptr, "column_sum_add: output {} of {} is missing", s, segments);
    outputs.vectors[s] = a.outputs[s];
  }
  const int64_t column_blocks = (a.cols + kColumnsPerBlock - 1) / kColumnsPerBlock;
  int64_t splits = (kTargetBlocks + column_blocks - 1) / column_blocks;
  splits = std::max<int64_t>(1, std::min(splits, (a.rows + kMinRowsPerSplit - 1) / kMinRowsPerSplit));
  const int64_t rows_per_split = (a.rows + splits - 1) / splits;
  splits = (a.rows + rows_per_split - 1) / rows_per_split;
  float* partial = nullptr;
  if (splits > 1) {
    DDPX_REQUIRE(static_cast<size_t>(splits * a.cols) <= a.scratch_floats && a.scratch != nullptr,
                 "column_sum_add: scratch of {} floats is too small for {} x {} partial sums", a.scratch_floats,
                 splits, a.cols);
    partial = a.scratch;
  }
  dim3 grid(static_cast<unsigned>(column_blocks), static_cast<unsigned>(splits));
  launch_after_producer("column_sum_stage1", column_sum_stage1<In>, grid,
                        dim3(kColumnsPerBlock, row_lanes(rows_per_split)), 0, stream, a.in, a.ld, a.rows, a.cols,
                        rows_per_split, partial, outputs);
  if (partial) {
    const int threads = 256;
    launch_after_producer("column_sum_stage2", column_sum_stage2,
                          static_cast<unsigned>((a.cols + threads - 1) / threads), threads, 0, stream, partial, splits,
                          a.cols, outputs);
  }
}

template void column_sum_add<float>(const ColumnSumArgs<float>&, cudaStream_t);
template void column_sum_add<__nv_bfloat16>(const ColumnSumArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace ddpx
