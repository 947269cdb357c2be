// Deterministic two-stage column sums; see column_sum.hpp.
// Stage 1: block (32 columns x 32 row lanes) sums one row range ("split") of 32 columns; stage 2 adds the splits
// in order. With one split, stage 1 adds into the output directly. 32 row lanes keep a thread's chain of loads
// short: the sums are mostly of a few hundred partial rows (LayerNorm's, GELU's), where 8 lanes left each thread
// 25 loads deep and the kernel latency-bound (6.9 us a call on an H200, 101 calls in a ViT-L/32 step). Fewer
// than 128 rows use fewer row lanes (a power of two, about 8 rows each): the position-embedding gradient's 32 rows x
// 51,200 columns took 18.6 us as 1,600 blocks of 1,024 threads, each thread loading one value.
// A batch is stage 1 with one split per job in one grid (a job's blocks adjacent, found by their first block), its
// blocks summing the same columns in the same order as column_sum_add's one-split stage 1: sum_block_column is
// the one piece of code both run. Its blocks have as many row lanes as its widest job (a job with fewer leaves the
// rest idle): 32 lanes for every job had made ViT-L/32's batch 416 blocks of 1,024 threads, two waves.
#include <cuda_bf16.h>

#include <algorithm>
#include <limits>

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "core/internal_assert.hpp"
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

using Outputs = detail::ColumnSumOutputs;

__device__ __forceinline__ void add_to_output(const Outputs& o, int64_t col, float v) {
  const int64_t s = col / o.segment;
  float& out = o.vectors[s][col - s * o.segment];
  out = o.overwrite ? v : out + v;
}

// Column `col` (below cols) of rows [begin, end) summed by the block's row lanes, each lane every row_lanes-th row
// from begin + row_lane, then the lanes' sums in lane order; the total is returned to row lane 0 (others: 0).
// Every thread of the block calls it (a __syncthreads inside); lanes at or past row_lanes only take part in it.
template <typename In>
__device__ __forceinline__ float sum_block_column(const In* in, int64_t ld, int64_t begin, int64_t end, int64_t col,
                                                  bool col_valid, int row_lanes) {
  __shared__ float sums[kRowLanes][kColumnsPerBlock + 1];
  const int lane = threadIdx.x, row_lane = threadIdx.y;
  float acc = 0.f;
  if (col_valid && row_lane < row_lanes) {
#pragma unroll 4
    for (int64_t r = begin + row_lane; r < end; r += row_lanes) acc += kernels::to_float(in[r * ld + col]);
  }
  sums[row_lane][lane] = acc;
  __syncthreads();
  float total = 0.f;
  if (row_lane == 0 && col_valid) {
#pragma unroll
    for (int i = 0; i < kRowLanes; ++i)
      if (i < row_lanes) total += sums[i][lane];
  }
  return total;
}

template <typename In>
__global__ void column_sum_stage1(const In* in, int64_t ld, int64_t rows, int64_t cols, int64_t rows_per_split,
                                  float* partial, Outputs outputs) {
  begin_after_producer();
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kColumnsPerBlock + threadIdx.x;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * rows_per_split;
  const int64_t end = min(rows, begin + rows_per_split);
  const float total = sum_block_column(in, ld, begin, end, col, col < cols, static_cast<int>(blockDim.y));
  if (threadIdx.y == 0 && col < cols) {
    if (partial) partial[static_cast<int64_t>(blockIdx.y) * cols + col] = total;
    else add_to_output(outputs, col, total);
  }
}

// One job of a batch: its matrix, its outputs, the first block of the batch's grid that is its, its row lanes.
struct BatchJob {
  const float* in;
  int64_t ld, rows, cols;
  Outputs outputs;
  int first_block, row_lanes;
};
struct BatchJobs {
  BatchJob job[kMaxColumnSumBatch];
  int count;
};

// Block b sums 32 columns of the job whose blocks hold b, all of its rows in one pass (one split of stage 1).
__global__ void column_sum_batch_kernel(BatchJobs jobs) {
  begin_after_producer();
  int j = 0;
  while (j + 1 < jobs.count && static_cast<int>(blockIdx.x) >= jobs.job[j + 1].first_block) ++j;
  const BatchJob& job = jobs.job[j];
  const int64_t col = static_cast<int64_t>(blockIdx.x - job.first_block) * kColumnsPerBlock + threadIdx.x;
  const float total = sum_block_column(job.in, job.ld, 0, job.rows, col, col < job.cols, job.row_lanes);
  if (threadIdx.y == 0 && col < job.cols) add_to_output(job.outputs, col, total);
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

// The outputs of a call, checked: at most kMaxColumnSumSegments segments of equal width, none missing.
template <typename In>
Outputs checked_outputs(const ColumnSumArgs<In>& a) {
  Outputs outputs{{}, a.segment < 0 ? a.cols : a.segment, a.overwrite};
  DDPX_REQUIRE(outputs.segment > 0, "column_sum_add: segment width {} must be positive", outputs.segment);
  const int64_t segments = (a.cols + outputs.segment - 1) / outputs.segment;
  DDPX_REQUIRE(segments <= kMaxColumnSumSegments && a.cols % outputs.segment == 0,
               "column_sum_add: {} columns do not split into at most {} segments of {}", a.cols,
               kMaxColumnSumSegments, outputs.segment);
  for (int64_t s = 0; s < segments; ++s) {
    DDPX_REQUIRE(a.outputs[s] != nullptr, "column_sum_add: output {} of {} is missing", s, segments);
    outputs.vectors[s] = a.outputs[s];
  }
  return outputs;
}

int64_t column_blocks_of(int64_t cols) { return (cols + kColumnsPerBlock - 1) / kColumnsPerBlock; }

}  // namespace

size_t column_sum_scratch_floats(int64_t cols) {
  return static_cast<size_t>(kTargetBlocks * kColumnsPerBlock + cols);
}

template <typename In>
void column_sum_add(const ColumnSumArgs<In>& a, cudaStream_t stream) {
  if (a.rows <= 0 || a.cols <= 0) return;
  const Outputs outputs = checked_outputs(a);
  const int64_t column_blocks = column_blocks_of(a.cols);
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

void ColumnSumBatch::add(const ColumnSumArgs<float>& job) {
  DDPX_INTERNAL_ASSERT(count_ < kMaxColumnSumBatch, "ColumnSumBatch: more than {} jobs", kMaxColumnSumBatch);
  if (job.rows <= 0 || job.cols <= 0) return;
  const Outputs outputs = checked_outputs(job);
  DDPX_REQUIRE(job.in != nullptr, "column_sum_add_batch: job {} has no input", count_);
  jobs_[count_++] = CheckedJob{job.in, job.ld, job.rows, job.cols, outputs};
}

void column_sum_add_batch(ColumnSumBatch& batch, cudaStream_t stream) {
  if (batch.size() == 0) return;
  BatchJobs jobs{};
  int64_t blocks = 0, columns = 0;
  int lanes = 1;  // the block's row lanes: the most any job uses (ViT-L/32's: 8, so 256-thread blocks in one wave)
  for (int i = 0; i < batch.size(); ++i) {
    const ColumnSumBatch::CheckedJob& a = batch.jobs_[i];
    columns += a.cols;
    DDPX_REQUIRE(blocks + column_blocks_of(a.cols) <= std::numeric_limits<int>::max(),
                 "column_sum_add_batch: {} columns in its first {} jobs exceed one launch's grid of {} blocks of {}",
                 columns, i + 1, std::numeric_limits<int>::max(), kColumnsPerBlock);
    jobs.job[i] = BatchJob{a.in, a.ld, a.rows, a.cols, a.outputs, static_cast<int>(blocks), row_lanes(a.rows)};
    blocks += column_blocks_of(a.cols);
    lanes = std::max(lanes, jobs.job[i].row_lanes);
  }
  jobs.count = batch.size();
  launch_after_producer("column_sum_batch_kernel", column_sum_batch_kernel, static_cast<unsigned>(blocks),
                        dim3(kColumnsPerBlock, lanes), 0, stream, jobs);
  batch.clear();
}

template void column_sum_add<float>(const ColumnSumArgs<float>&, cudaStream_t);
template void column_sum_add<__nv_bfloat16>(const ColumnSumArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace ddpx
