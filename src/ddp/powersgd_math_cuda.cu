// PowerSgdBucketMath on a GPU: a fixed handful of launches per bucket, whatever its tensors, each one pass over
// the data it needs (the step is memory-bound: rank R <= 8 makes every product a skinny one).
//   begin:      one kernel: M = G + E written to E (G, the bucket, is not written), vectors of M packed, and
//               P_i = M_i Q_i from the same read (a block per 4 rows, its threads striding the columns, sums added
//               in a fixed order; Q rows come from L1/L2, each read once for the block's rows). After a step that
//               left its factors it first forms that step's E on the fly (Note [Error feedback deferred to the
//               next begin]).
//   compute_q:  one kernel: partial sums of M_i^T P_i over 128-row slabs and 128-column strips into the shared
//               scratch; the last block of a strip to arrive sums its slabs in slab order into Q (deterministic:
//               graph replays equal eager steps bit for bit). compute_q_leaving_factors adds blocks that end the
//               step for the vectors (Note [A bucket's chain, one kernel per step of it]).
//   finish:     one kernel: bucket = P_i Q_i^T (or the averaged vectors), E = M - bucket, a block per 4 rows.
//               A bucket that leaves its factors has no finish: low_rank_gradients() describes the matrices
//               instead (Note [Low-rank gradients fused into the update], ddp/comm_hook.hpp).
//   orthogonalize_q/_p: one kernel for all matrices of the bucket, one block per matrix holding its columns in
//               registers (R <= 8 and <= 4096 rows; a global-memory block per matrix beyond that). Q's runs on the
//               hook's side stream one step ahead where it can (Note [Q's orthogonalization beside the hook's
//               chain], ddp/powersgd_hook.cpp).
// Each kernel is sized so that one bucket's launch fills the GPU with loads in flight: float4s where rows are
// aligned (factor rows too), several rows per thread, blocks small enough to be resident together. On an H200
// (ViT-L/32, rank 4, 73 buckets; bench/powersgd_timing) this took the hook's math from 8.3 to 5.8 ms a step; the
// slab reduction alone had been 2.4 ms, at 4 blocks per matrix.
// Work is described by task tables built and uploaded once at construction (offsets relative to the bucket, so
// the bucket pointer is a kernel argument), in the same single allocation as E, P and Q: after construction
// nothing allocates or synchronizes, so steps can be captured into CUDA graphs. Factor ranks above 8 are handled
// in passes of 8 columns (P, Q) and a generic loop (finish). Vectorized float4 paths are taken where a matrix's
// rows are 16-byte aligned, scalar ones elsewhere.
// Numerics: fp32 throughout, sums in a fixed order; differs from the host (OpenBLAS, double norms) by rounding,
// except at fp32's range limits: a column whose squared norm underflows (all entries below ~2.6e-23) or overflows
// (entries above ~1.8e19) is zeroed here, where the host still normalizes it.
//
// Note [Error feedback deferred to the next begin]
// The error update E = M - P Q^T reads and writes the whole bucket (two of the hook's passes, 2.5 GB a ViT-L/32
// step), only for the next begin to read E again and add G. When the consumer reads P Q^T from the factors,
// the step ends in compute_q_leaving_factors without it: E keeps M, P keeps this step's (averaged,
// orthogonalized) P, and q_ keeps the averaged Q, because orthogonalize_q writes the Q that begin multiplies by
// into q_orth_ instead of overwriting q_ (set_q uploads into q_orth_ for the same reason). The next begin then computes, per element, E = M - P Q^T
// with finish's products (low_rank_product over the same registers) and subtraction, then M' = E + G: the same
// roundings as finish followed by begin, so both orders give equal bits (tested by
// PowerSgdCuda.RunLeavingWireLeavesExactlyRunsProductsInTheFactors over several steps). Which begin must
// subtract is a device flag, written by whichever ending ran (1 by compute_q_leaving_factors, 0 by finish) and
// read by begin, so a captured graph and eager steps may alternate between the two endings. Deferral needs a single
// factor pass (every rank <= 8), which can_leave_factors already requires. On an H200 (bench/powersgd_timing,
// ViT-L/32, rank 4) the phases of a step ending this way take 4.95 ms against 6.0 ms with finish(): finish falls
// from 1.79 to 0.55 ms and begin rises from 1.83 to 2.06 ms.
//
// Note [A bucket's chain, one kernel per step of it]
// The hook's chain for one bucket is a row of dependent launches, and at ViT-L/32's 73 buckets of 25 MiB each
// launch costs more than its work: on an H200 (bench/powersgd_timing, rank 4) the math took 4.3 ms a step in 73
// buckets and 1.7 ms in 4 buckets of 400 MiB, the same elements; the launch that ended a step leaving the
// factors, which only averaged the vectors, took 0.50 ms over 73 buckets and 0.04 over 4. So each step of the
// chain is one kernel (together 4.32 -> 3.89 ms a step leaving the factors, 804 -> 731 graph nodes; 2026-12-04):
//  - Q = M^T P sums its slabs in the same launch: each block adds one to its strip's arrival counter after its
//    partial sums are stored and fenced, and the block that arrives last sums the strip's slabs, in slab order
//    (the bits of the separate reduction it replaces), and resets the counter for the next launch;
//  - a bucket that leaves its factors ends its step in compute_q_leaving_factors: extra blocks of the same launch
//    write the averaged vectors into the bucket, subtract them from E, and set the deferral flag; the vectors'
//    averages come from the first all-reduce, which precedes compute_q, and nothing after compute_q reads them
//    but the update, which follows the whole chain.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "core/kernel_launch.cuh"
#include "core/low_rank.hpp"
#include "ddp/device_scratch.hpp"
#include "ddp/powersgd_math.hpp"

namespace ddpx {
namespace {

constexpr int kThreads = 256;            // every kernel but Gram-Schmidt
constexpr int kWarps = kThreads / 32;
constexpr int kRowsPerTask = 4;          // rows of one block in begin/finish (a Q row is read once for all of them)
// begin/finish/slab blocks resident per SM (registers capped to fit without spills): a bucket's blocks run in
// about one wave, their latencies overlapped (measured on an H200: at one block per SM, begin ran at a quarter of
// DRAM bandwidth). Up to 4 factor columns a pass, begin and slab fit 4 blocks in 64 registers with no spill
// (uncapped they took 108 and 80, 2 and 3 blocks per SM); 8 columns keep their earlier caps, which do not spill.
constexpr int begin_blocks_per_sm(int factor_columns) { return factor_columns <= 4 ? 4 : 2; }
constexpr int slab_blocks_per_sm(int factor_columns) { return factor_columns <= 4 ? 4 : 1; }
constexpr int kFinishBlocksPerSm = 3;
constexpr int kFactorChunk = 8;          // factor columns per pass of begin / compute_q
constexpr int kSlabRows = 128;           // rows summed by one block of compute_q, 16 per warp
constexpr int kSlabRowsPerWarp = kSlabRows / kWarps;
constexpr int kStripCols = 128;          // columns of one block of compute_q: a warp's 32 lanes x 4
constexpr long long kSegmentChunk = 8192;
constexpr int kOrthThreads = 512;
constexpr int kOrthRowsPerThread = 8;    // register path: rows <= 4096

cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

struct MatrixInfo {
  long long offset;          // in the bucket and in E
  int rows, cols, rank;
  int slabs;                 // ceil(rows / kSlabRows)
  long long p_offset, q_offset, partial_offset;
};

struct SegmentInfo {
  long long offset, numel, packed_offset;
};

// begin/finish: rows [begin, end) of matrix `index`, or elements [begin, end) of segment `index`.
struct RowTask {
  int is_segment, index;
  long long begin, end;
};

struct SlabTask {  // compute_q: rows of slab `slab`, columns [col_begin, +kStripCols), factor columns [col0, +8)
  int matrix, slab, col_begin, col0;
  int strip;  // index of (matrix, col0, col_begin): its arrival counter
};

struct OrthRef {  // a [rows, cols] row-major factor at `offset` floats into P or Q
  long long offset;
  int rows, cols;
};

__device__ __forceinline__ float warp_sum(float value) {
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

__device__ __forceinline__ bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

__device__ __forceinline__ float component(const float4& v, int t) {
  return t == 0 ? v.x : t == 1 ? v.y : t == 2 ? v.z : v.w;
}

// P's row `row` of a previous step (columns [0, K), zero beyond rank) with coherent loads: begin reads these rows
// of P and then overwrites them in the same kernel (each block its own rows), which rules out the read-only path.
template <int K>
__device__ __forceinline__ void load_previous_p_row(const float* p, long long row, int rank, float (&out)[K]) {
#pragma unroll
  for (int r = 0; r < K; ++r) out[r] = r < rank ? p[row * rank + r] : 0.0f;
}

// begin, one factor-column pass: `first_pass` also applies error feedback (E = G + E) and packs the vectors.
// Note [Error feedback deferred to the next begin]: where the previous step ended leaving its factors
// (*deferred != 0, read on the device so graph replays decide alike), E still holds that step's M and P, Q_prev
// its factors; the first pass forms E = M - P Q_prev^T on the fly (finish's products and subtraction, so the
// bits equal finish's) before adding G. A block reads its own rows of the old P before it writes the new ones.
// A block takes kRowsPerTask rows of a matrix, its threads striding the columns (a float4 each where rows are
// aligned), so each thread has the rows' loads in flight together and reads its Q rows once for all of them; the
// threads' sums are added by a fixed butterfly in each warp, then in warp order: every run sums alike.
template <int K>
__global__ void __launch_bounds__(kThreads, begin_blocks_per_sm(K))
    begin_kernel(const float* __restrict__ bucket, float* __restrict__ error, float* __restrict__ packed,
                 float* __restrict__ p, const float* __restrict__ q, const float* __restrict__ q_previous,
                 const int* deferred, const MatrixInfo* matrices, const SegmentInfo* segments,
                 const RowTask* tasks, int col0, bool first_pass) {
  begin_after_producer();
  const RowTask task = tasks[blockIdx.x];
  if (task.is_segment) {
    const SegmentInfo s = segments[task.index];
    for (long long k = task.begin + threadIdx.x; k < task.end; k += blockDim.x) {
      const float value = bucket[s.offset + k] + error[s.offset + k];
      error[s.offset + k] = value;
      packed[s.packed_offset + k] = value;
    }
    return;
  }
  const MatrixInfo m = matrices[task.index];
  const long long row0 = task.begin;
  const int rows = static_cast<int>(task.end - task.begin);
  const int kc = min(K, m.rank - col0);
  const float* g = bucket + m.offset;
  float* e = error + m.offset;
  const float* qm = q + m.q_offset;
  const float* q_prev = q_previous + m.q_offset;
  // Deferral only ever follows a single-pass step (can_leave_factors: every rank <= 8 = K >= rank).
  const bool subtract = first_pass && deferred != nullptr && *deferred != 0;
  float p_prev[kRowsPerTask][K] = {};
  if (subtract) {
#pragma unroll
    for (int w = 0; w < kRowsPerTask; ++w)
      if (w < rows) load_previous_p_row<K>(p + m.p_offset, row0 + w, m.rank, p_prev[w]);
  }
  // (P Q_prev^T)[row0 + w, c] for the block's rows, as finish_kernel evaluates it.
  auto previous_approximation = [&](long long c, float (&approximation)[kRowsPerTask]) {
    float factor[K];
    load_factor_row<K>(q_prev, c, m.rank, 0, m.rank, factor);
#pragma unroll
    for (int w = 0; w < kRowsPerTask; ++w) approximation[w] = low_rank_product<K>(p_prev[w], factor);
  };
  float acc[kRowsPerTask][K] = {};
  if (m.cols % 4 == 0 && aligned16(g) && aligned16(e)) {
    const int cols4 = m.cols / 4;
    for (int c4 = threadIdx.x; c4 < cols4; c4 += kThreads) {
      float previous[4][kRowsPerTask] = {};
      if (subtract) {
#pragma unroll
        for (int t = 0; t < 4; ++t) previous_approximation(4LL * c4 + t, previous[t]);
      }
      float4 values[kRowsPerTask];
#pragma unroll
      for (int w = 0; w < kRowsPerTask; ++w) {
        values[w] = make_float4(0, 0, 0, 0);
        if (w >= rows) continue;
        const long long at = (row0 + w) * m.cols + 4LL * c4;
        float4 v = *reinterpret_cast<const float4*>(e + at);
        if (subtract)
          v = make_float4(__fsub_rn(v.x, previous[0][w]), __fsub_rn(v.y, previous[1][w]),
                          __fsub_rn(v.z, previous[2][w]), __fsub_rn(v.w, previous[3][w]));
        if (first_pass) {
          const float4 grad = __ldg(reinterpret_cast<const float4*>(g + at));
          v = make_float4(__fadd_rn(v.x, grad.x), __fadd_rn(v.y, grad.y), __fadd_rn(v.z, grad.z),
                          __fadd_rn(v.w, grad.w));
          *reinterpret_cast<float4*>(e + at) = v;
        }
        values[w] = v;
      }
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        float factor[K];
        load_factor_row<K>(qm, 4LL * c4 + t, m.rank, col0, kc, factor);
#pragma unroll
        for (int w = 0; w < kRowsPerTask; ++w)
#pragma unroll
          for (int r = 0; r < K; ++r) acc[w][r] += component(values[w], t) * factor[r];
      }
    }
  } else {
    for (int c = threadIdx.x; c < m.cols; c += kThreads) {
      float previous[kRowsPerTask] = {};
      if (subtract) previous_approximation(c, previous);
      float factor[K];
      load_factor_row<K>(qm, c, m.rank, col0, kc, factor);
#pragma unroll
      for (int w = 0; w < kRowsPerTask; ++w) {
        if (w >= rows) continue;
        const long long at = (row0 + w) * m.cols + c;
        float v = e[at];
        if (subtract) v = __fsub_rn(v, previous[w]);
        if (first_pass) {
          v = __fadd_rn(v, g[at]);
          e[at] = v;
        }
#pragma unroll
        for (int r = 0; r < K; ++r) acc[w][r] += v * factor[r];
      }
    }
  }
  __shared__ float warp_sums[kWarps][kRowsPerTask][K];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int w = 0; w < kRowsPerTask; ++w)
#pragma unroll
    for (int r = 0; r < K; ++r) {
      const float total = warp_sum(acc[w][r]);
      if (lane == 0) warp_sums[warp][w][r] = total;
    }
  __syncthreads();
  if (threadIdx.x < kRowsPerTask * K) {
    const int w = threadIdx.x / K, r = threadIdx.x % K;
    float total = 0;
#pragma unroll
    for (int x = 0; x < kWarps; ++x) total += warp_sums[x][w][r];
    if (w < rows && r < kc) p[m.p_offset + (row0 + w) * m.rank + col0 + r] = total;
  }
}

// The vectors' end of a step, one finish task: bucket = the averaged (packed) values, E = M - bucket.
__device__ __forceinline__ void finish_segment(const RowTask& task, const SegmentInfo* segments, float* bucket,
                                               float* error, const float* packed) {
  const SegmentInfo s = segments[task.index];
  for (long long k = task.begin + threadIdx.x; k < task.end; k += blockDim.x) {
    const float average = packed[s.packed_offset + k];
    bucket[s.offset + k] = average;
    error[s.offset + k] -= average;
  }
}

// compute_q's vector blocks (compute_q_leaving_factors; Note [A bucket's chain, one kernel per step of it]).
struct VectorEnding {
  float* bucket;
  float* error;  // the vectors' part only (the slab blocks read the matrices' part)
  const float* packed;
  const SegmentInfo* segments;
  const RowTask* tasks;  // finish's vector tasks
  unsigned task_count;
  int* deferred;  // set to 1 by the first vector block; nullptr: compute_q alone, no vector blocks
};

// compute_q: Q[c][col0 + r] = sum over the rows i of M[i, c] * P[i, col0 + r]. A block takes 128 rows (a slab) of
// a strip of kStripCols columns: warp w sums rows [16w, 16w + 16) of the slab (a lane: 4 columns, adjacent where
// rows are aligned, else 32 apart so loads stay coalesced), the warps' sums are added in warp order, and the
// slab's sums stored as partial[slab][c][col0 + r]. The block that arrives last at its strip's counter then sums
// the strip's slabs in slab order into Q (Note [A bucket's chain, one kernel per step of it]). Blocks past
// task_count end the vectors' step instead (VectorEnding), the first of them setting the deferral flag.
template <int K>
__global__ void __launch_bounds__(kThreads, slab_blocks_per_sm(K))
    slab_kernel(const float* __restrict__ error, const float* __restrict__ p, float* __restrict__ partial,
                float* __restrict__ q, unsigned* arrivals, const MatrixInfo* matrices, const SlabTask* tasks,
                unsigned task_count, VectorEnding vectors) {
  __shared__ float sums[kWarps][kStripCols][K];
  __shared__ bool last_to_arrive;
  begin_after_producer();
  if (blockIdx.x >= task_count) {
    const unsigned v = blockIdx.x - task_count;
    if (v == 0 && threadIdx.x == 0) *vectors.deferred = 1;
    if (v < vectors.task_count)
      finish_segment(vectors.tasks[v], vectors.segments, vectors.bucket, vectors.error, vectors.packed);
    return;
  }
  const SlabTask task = tasks[blockIdx.x];
  const MatrixInfo m = matrices[task.matrix];
  const int kc = min(K, m.rank - task.col0);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const float* e = error + m.offset;
  const int row_begin = task.slab * kSlabRows + warp * kSlabRowsPerWarp;
  const int row_end = min(m.rows, row_begin + kSlabRowsPerWarp);
  const bool vectorized = m.cols % 4 == 0 && aligned16(e);
  int col[4];  // in the strip
#pragma unroll
  for (int t = 0; t < 4; ++t) col[t] = vectorized ? 4 * lane + t : lane + 32 * t;
  float acc[4][K] = {};
#pragma unroll 8
  for (int i = row_begin; i < row_end; ++i) {
    float factor[K];
    load_factor_row<K>(p + m.p_offset, i, m.rank, task.col0, kc, factor);
    const float* row = e + static_cast<long long>(i) * m.cols + task.col_begin;
    float v[4];
    if (vectorized) {
      if (task.col_begin + col[0] < m.cols) {
        const float4 x = *reinterpret_cast<const float4*>(row + col[0]);
        v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
      } else {
        v[0] = v[1] = v[2] = v[3] = 0;
      }
    } else {
#pragma unroll
      for (int t = 0; t < 4; ++t) v[t] = task.col_begin + col[t] < m.cols ? row[col[t]] : 0.0f;
    }
#pragma unroll
    for (int t = 0; t < 4; ++t)
#pragma unroll
      for (int r = 0; r < K; ++r) acc[t][r] += v[t] * factor[r];
  }
#pragma unroll
  for (int t = 0; t < 4; ++t)
#pragma unroll
    for (int r = 0; r < K; ++r) sums[warp][col[t]][r] = acc[t][r];
  __syncthreads();
  const long long slab_stride = static_cast<long long>(m.cols) * m.rank;
  float* slabs = partial + m.partial_offset;
  for (int k = threadIdx.x; k < kStripCols * K; k += kThreads) {
    const int c = k / K, r = k % K;
    if (task.col_begin + c >= m.cols || r >= kc) continue;
    float total = 0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) total += sums[w][c][r];
    slabs[task.slab * slab_stride + static_cast<long long>(task.col_begin + c) * m.rank + task.col0 + r] = total;
  }
  // Arrival: every thread's stores fenced before the count (the classic last-block reduction); the last block
  // reads the other blocks' slabs through L2 (__ldcg), fenced again after seeing the count.
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last_to_arrive = atomicAdd(arrivals + task.strip, 1u) == static_cast<unsigned>(m.slabs - 1);
  __syncthreads();
  if (!last_to_arrive) return;
  __threadfence();
  for (int k = threadIdx.x; k < kStripCols * K; k += kThreads) {
    const int c = k / K, r = k % K;
    if (task.col_begin + c >= m.cols || r >= kc) continue;
    const long long at = static_cast<long long>(task.col_begin + c) * m.rank + task.col0 + r;
    float total = 0;
    for (int s = 0; s < m.slabs; ++s) total += __ldcg(slabs + s * slab_stride + at);
    q[m.q_offset + at] = total;
  }
  if (threadIdx.x == 0) arrivals[task.strip] = 0;  // every block of the strip has counted: ready for the next launch
}

// finish: bucket = P Q^T and E = M - bucket for matrices; bucket = packed and E = M - packed for vectors. A block
// takes kRowsPerTask rows, as in begin (no sums across threads here). K >= every rank of the bucket (registers
// hold the block's P rows; the products are core/low_rank.hpp's low_rank_product, which the optimizer evaluates
// alike), or 0: any rank, P and Q read from L1 in the inner loop. Block 0 also clears *deferred: the next begin
// has no E = M - P Q^T left to form (Note [Error feedback deferred to the next begin]).
template <int K>
__global__ void __launch_bounds__(kThreads, kFinishBlocksPerSm)
    finish_kernel(float* __restrict__ bucket, float* __restrict__ error, const float* __restrict__ packed,
                  const float* __restrict__ p, const float* __restrict__ q, const MatrixInfo* matrices,
                  const SegmentInfo* segments, const RowTask* tasks, int* deferred) {
  begin_after_producer();
  if (blockIdx.x == 0 && threadIdx.x == 0) *deferred = 0;
  const RowTask task = tasks[blockIdx.x];
  if (task.is_segment) {
    finish_segment(task, segments, bucket, error, packed);
    return;
  }
  const MatrixInfo m = matrices[task.index];
  const long long row0 = task.begin;
  const int rows = static_cast<int>(task.end - task.begin);
  float* out = bucket + m.offset;
  float* e = error + m.offset;
  const float* pm = p + m.p_offset;
  const float* qm = q + m.q_offset;
  constexpr int kHeld = K > 0 ? K : 1;
  float prow[kRowsPerTask][kHeld] = {};
  if constexpr (K > 0) {
#pragma unroll
    for (int w = 0; w < kRowsPerTask; ++w)
      if (w < rows) load_factor_row<kHeld>(pm, row0 + w, m.rank, 0, m.rank, prow[w]);
  }
  // (P Q^T)[row0 + w, c] for the block's rows, Q's row c read once for all of them.
  auto approximate = [&](long long c, float (&approximation)[kRowsPerTask]) {
    if constexpr (K > 0) {
      float factor[kHeld];
      load_factor_row<kHeld>(qm, c, m.rank, 0, m.rank, factor);
#pragma unroll
      for (int w = 0; w < kRowsPerTask; ++w) approximation[w] = low_rank_product<kHeld>(prow[w], factor);
    } else {
#pragma unroll
      for (int w = 0; w < kRowsPerTask; ++w) {
        approximation[w] = 0;
        if (w >= rows) continue;
        for (int r = 0; r < m.rank; ++r)
          approximation[w] += __ldg(pm + (row0 + w) * m.rank + r) * __ldg(qm + c * m.rank + r);
      }
    }
  };
  if (m.cols % 4 == 0 && aligned16(out) && aligned16(e)) {
    const int cols4 = m.cols / 4;
    for (int c4 = threadIdx.x; c4 < cols4; c4 += kThreads) {
      float a[4][kRowsPerTask];
#pragma unroll
      for (int t = 0; t < 4; ++t) approximate(4LL * c4 + t, a[t]);
#pragma unroll
      for (int w = 0; w < kRowsPerTask; ++w) {
        if (w >= rows) continue;
        const long long at = (row0 + w) * m.cols + 4LL * c4;
        const float4 v = *reinterpret_cast<const float4*>(e + at);
        *reinterpret_cast<float4*>(out + at) = make_float4(a[0][w], a[1][w], a[2][w], a[3][w]);
        *reinterpret_cast<float4*>(e + at) = make_float4(v.x - a[0][w], v.y - a[1][w], v.z - a[2][w], v.w - a[3][w]);
      }
    }
  } else {
    for (int c = threadIdx.x; c < m.cols; c += kThreads) {
      float a[kRowsPerTask];
      approximate(c, a);
#pragma unroll
      for (int w = 0; w < kRowsPerTask; ++w) {
        if (w >= rows) continue;
        const long long at = (row0 + w) * m.cols + c;
        out[at] = a[w];
        e[at] -= a[w];
      }
    }
  }
}

// Gram-Schmidt, one block per matrix with its (rows <= 4096) x (cols <= K) values in registers. Iteration j
// needs one block reduction: s_k = <a_j, a_k> for k >= j; then a_j /= |a_j| and a_k -= (s_k / |a_j|) a_j, which
// is the host's sequence (normalize, then project every later column on the normalized one). Reads the factors
// at `source`, writes them at `factors` (the same offsets; the two may be the same buffer).
template <int K>
__global__ void __launch_bounds__(kOrthThreads)
    orthogonalize_registers_kernel(const float* source, float* factors, const OrthRef* refs) {
  __shared__ float partial[2][kOrthThreads / 32][K];
  begin_after_producer();
  const OrthRef ref = refs[blockIdx.x];
  const float* input = source + ref.offset;
  const struct {
    float* data;
    int rows, cols;
  } m{factors + ref.offset, ref.rows, ref.cols};
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float a[kOrthRowsPerThread][K];
#pragma unroll
  for (int s = 0; s < kOrthRowsPerThread; ++s) {
    const int i = threadIdx.x + s * kOrthThreads;
#pragma unroll
    for (int k = 0; k < K; ++k)
      a[s][k] = i < m.rows && k < m.cols ? input[static_cast<long long>(i) * m.cols + k] : 0.0f;
  }
#pragma unroll
  for (int j = 0; j < K; ++j) {
    if (j >= m.cols) break;
    float sums[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
      sums[k] = 0;
      if (k < j) continue;
#pragma unroll
      for (int s = 0; s < kOrthRowsPerThread; ++s) sums[k] += a[s][j] * a[s][k];
      sums[k] = warp_sum(sums[k]);
      if (lane == 0) partial[j % 2][warp][k] = sums[k];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < K; ++k) {
      if (k < j) continue;
      float total = 0;
      for (int w = 0; w < kOrthThreads / 32; ++w) total += partial[j % 2][w][k];
      sums[k] = total;
    }
    const float inverse_norm = sums[j] > 0 ? 1.0f / sqrtf(sums[j]) : 0.0f;
#pragma unroll
    for (int s = 0; s < kOrthRowsPerThread; ++s) {
      a[s][j] *= inverse_norm;
#pragma unroll
      for (int k = 0; k < K; ++k)
        if (k > j) a[s][k] -= sums[k] * inverse_norm * a[s][j];
    }
  }
#pragma unroll
  for (int s = 0; s < kOrthRowsPerThread; ++s) {
    const int i = threadIdx.x + s * kOrthThreads;
#pragma unroll
    for (int k = 0; k < K; ++k)
      if (i < m.rows && k < m.cols) m.data[static_cast<long long>(i) * m.cols + k] = a[s][k];
  }
}

__device__ float block_sum(float value, float* shared) {
  value = warp_sum(value);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) shared[warp] = value;
  __syncthreads();
  float total = 0;
  for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) total += shared[w];
  __syncthreads();
  return total;
}

// Gram-Schmidt for matrices beyond the register path (more rows or columns): one block per matrix, in memory
// (copied from `source` first where that is another buffer).
__global__ void __launch_bounds__(kOrthThreads)
    orthogonalize_memory_kernel(const float* source, float* factors, const OrthRef* refs) {
  __shared__ float shared[kOrthThreads / 32];
  begin_after_producer();
  const OrthRef ref = refs[blockIdx.x];
  const struct {
    float* data;
    int rows, cols;
  } m{factors + ref.offset, ref.rows, ref.cols};
  if (source != factors) {
    const float* input = source + ref.offset;
    for (long long k = threadIdx.x; k < static_cast<long long>(m.rows) * m.cols; k += blockDim.x) m.data[k] = input[k];
    __syncthreads();
  }
  for (int j = 0; j < m.cols; ++j) {
    float partial = 0;
    for (int i = threadIdx.x; i < m.rows; i += blockDim.x) partial += m.data[i * m.cols + j] * m.data[i * m.cols + j];
    const float sum_squares = block_sum(partial, shared);
    const float inverse_norm = sum_squares > 0 ? 1.0f / sqrtf(sum_squares) : 0.0f;
    for (int i = threadIdx.x; i < m.rows; i += blockDim.x) m.data[i * m.cols + j] *= inverse_norm;
    __syncthreads();
    for (int k = j + 1; k < m.cols; ++k) {
      partial = 0;
      for (int i = threadIdx.x; i < m.rows; i += blockDim.x) partial += m.data[i * m.cols + j] * m.data[i * m.cols + k];
      const float projection = block_sum(partial, shared);
      for (int i = threadIdx.x; i < m.rows; i += blockDim.x)
        m.data[i * m.cols + k] -= projection * m.data[i * m.cols + j];
      __syncthreads();
    }
  }
}

// The smallest of 1, 2, 4, 8 holding `rank` (rank <= 8).
int register_width(int rank) { return rank <= 1 ? 1 : rank <= 2 ? 2 : rank <= 4 ? 4 : 8; }

// A table inside the bucket's one device allocation: staged on the host, then bound to its device address.
template <typename T>
struct Table {
  size_t offset = 0;  // bytes from the start of the tables
  unsigned size = 0;
  const T* data = nullptr;
  void bind(const unsigned char* tables) { data = reinterpret_cast<const T*>(tables + offset); }
};

class TableStaging {
 public:
  template <typename T>
  Table<T> add(const std::vector<T>& host) {
    Table<T> table;
    table.offset = (bytes_.size() + 15) / 16 * 16;
    table.size = static_cast<unsigned>(host.size());
    bytes_.resize(table.offset + host.size() * sizeof(T));
    if (!host.empty()) std::memcpy(bytes_.data() + table.offset, host.data(), host.size() * sizeof(T));
    return table;
  }
  const std::vector<unsigned char>& bytes() const { return bytes_; }

 private:
  std::vector<unsigned char> bytes_;
};

// Matrices to orthogonalize, split by kernel: registers (grouped by register width) or memory.
struct OrthPlan {
  Table<OrthRef> by_width[4];  // widths 1, 2, 4, 8
  Table<OrthRef> in_memory;

  OrthPlan() = default;
  OrthPlan(const std::vector<OrthRef>& refs, TableStaging& staging) {
    std::vector<OrthRef> groups[4], rest;
    for (const OrthRef& ref : refs) {
      if (ref.cols <= kFactorChunk && ref.rows <= kOrthThreads * kOrthRowsPerThread) {
        const int width = register_width(ref.cols);
        groups[width == 1 ? 0 : width == 2 ? 1 : width == 4 ? 2 : 3].push_back(ref);
      } else {
        rest.push_back(ref);
      }
    }
    for (int g = 0; g < 4; ++g) by_width[g] = staging.add(groups[g]);
    in_memory = staging.add(rest);
  }

  void bind(const unsigned char* tables) {
    for (Table<OrthRef>& table : by_width) table.bind(tables);
    in_memory.bind(tables);
  }

  // Orthogonalizes the factors read at `source` into `factors` (which may be `source`).
  void launch(const float* source, float* factors, cudaStream_t stream) const {
    const Table<OrthRef>* w = by_width;
    auto registers = [&](auto kernel, const Table<OrthRef>& t) {
      if (t.size)
        launch_after_producer("orthogonalize_registers_kernel", kernel, t.size, kOrthThreads, 0, stream, source,
                              factors, t.data);
    };
    registers(orthogonalize_registers_kernel<1>, w[0]);
    registers(orthogonalize_registers_kernel<2>, w[1]);
    registers(orthogonalize_registers_kernel<4>, w[2]);
    registers(orthogonalize_registers_kernel<8>, w[3]);
    if (in_memory.size)
      launch_after_producer("orthogonalize_memory_kernel", orthogonalize_memory_kernel, in_memory.size, kOrthThreads, 0,
                            stream, source, factors, in_memory.data);
  }
};

class CudaPowerSgdMath : public PowerSgdBucketMath {
 public:
  CudaPowerSgdMath(const CompressionLayout& layout, DeviceScratch& scratch) : layout_(layout), scratch_(scratch) {
    std::vector<MatrixInfo> matrices;
    long long partial_floats = 0;
    int max_rank = 0;
    for (const LowRankMatrix& m : layout.matrices) {
      const int slabs = static_cast<int>((m.rows + kSlabRows - 1) / kSlabRows);
      matrices.push_back({static_cast<long long>(m.offset), int(m.rows), int(m.cols), int(m.rank), slabs,
                          static_cast<long long>(m.p_offset), static_cast<long long>(m.q_offset), partial_floats});
      partial_floats += static_cast<long long>(slabs) * m.cols * m.rank;
      max_rank = std::max(max_rank, int(m.rank));
    }
    std::vector<SegmentInfo> segments;
    long long packed_offset = 0;
    for (const BucketSegment& s : layout.uncompressed) {
      segments.push_back({static_cast<long long>(s.offset), static_cast<long long>(s.numel), packed_offset});
      packed_offset += static_cast<long long>(s.numel);
    }
    TableStaging staging;
    matrices_ = staging.add(matrices);
    segments_ = staging.add(segments);

    // begin/finish rows (pass 0 also carries the vectors); later passes only matrices of larger rank.
    passes_ = std::max(1, (max_rank + kFactorChunk - 1) / kFactorChunk);
    std::vector<RowTask> finish_tasks;
    for (size_t i = 0; i < matrices.size(); ++i)
      for (long long row = 0; row < matrices[i].rows; row += kRowsPerTask)
        finish_tasks.push_back({0, int(i), row, std::min<long long>(row + kRowsPerTask, matrices[i].rows)});
    const unsigned matrix_tasks = static_cast<unsigned>(finish_tasks.size());
    for (size_t i = 0; i < segments.size(); ++i)
      for (long long k = 0; k < segments[i].numel; k += kSegmentChunk)
        finish_tasks.push_back({1, int(i), k, std::min(k + kSegmentChunk, segments[i].numel)});
    finish_tasks_ = staging.add(finish_tasks);
    begin_tasks_.push_back(finish_tasks_);
    // The vectors' tasks, the tail of finish's table: what compute_q_leaving_factors adds to compute_q.
    segment_tasks_ = finish_tasks_;
    segment_tasks_.offset += matrix_tasks * sizeof(RowTask);
    segment_tasks_.size -= matrix_tasks;
    for (int pass = 1; pass < passes_; ++pass) {
      std::vector<RowTask> tasks;
      for (const RowTask& t : finish_tasks)
        if (!t.is_segment && matrices[t.index].rank > pass * kFactorChunk) tasks.push_back(t);
      begin_tasks_.push_back(staging.add(tasks));
    }

    std::vector<SlabTask> slab_tasks;
    int strips = 0;  // (matrix, col0, strip) triples, each with its arrival counter
    for (size_t i = 0; i < matrices.size(); ++i) {
      const MatrixInfo& m = matrices[i];
      for (int col0 = 0; col0 < m.rank; col0 += kFactorChunk)
        for (int col = 0; col < m.cols; col += kStripCols, ++strips)
          for (int slab = 0; slab < m.slabs; ++slab) slab_tasks.push_back({int(i), slab, col, col0, strips});
    }
    slab_tasks_ = staging.add(slab_tasks);
    width_ = max_rank == 0 ? 1 : register_width(std::min(max_rank, kFactorChunk));
    finish_width_ = max_rank > kFactorChunk ? 0 : width_;

    std::vector<OrthRef> p_refs, q_refs;
    for (const LowRankMatrix& m : layout.matrices) {
      p_refs.push_back({static_cast<long long>(m.p_offset), int(m.rows), int(m.rank)});
      q_refs.push_back({static_cast<long long>(m.q_offset), int(m.cols), int(m.rank)});
    }
    orth_p_ = OrthPlan(p_refs, staging);
    orth_q_ = OrthPlan(q_refs, staging);

    // Note [Low-rank gradients fused into the update]: the bucket as pieces, a factor piece per matrix and plain
    // pieces (vectors, padding) between them, when every matrix is whole 4-element vectors and the ranks fit the
    // register path (finish_width_ > 0: the products are low_rank_product<finish_width_>).
    bool vectors_whole = true;
    for (const LowRankMatrix& m : layout.matrices)
      vectors_whole = vectors_whole && m.offset % 4 == 0 && (m.rows * m.cols) % 4 == 0;
    if (finish_width_ > 0 && !layout.matrices.empty() && vectors_whole && layout.bucket_elements % 4 == 0) {
      std::vector<LowRankMatrix> in_order = layout.matrices;
      std::sort(in_order.begin(), in_order.end(),
                [](const LowRankMatrix& a, const LowRankMatrix& b) { return a.offset < b.offset; });
      std::vector<LowRankPiece> pieces;
      long long at = 0;
      for (const LowRankMatrix& m : in_order) {
        const auto offset = static_cast<long long>(m.offset);
        if (offset > at) pieces.push_back({at, offset - at, 0, 0, 0, 0});
        pieces.push_back({offset, m.rows * m.cols, int(m.cols), int(m.rank), static_cast<long long>(m.p_offset),
                          static_cast<long long>(m.q_offset)});
        at = offset + m.rows * m.cols;
      }
      if (at < static_cast<long long>(layout.bucket_elements))
        pieces.push_back({at, static_cast<long long>(layout.bucket_elements) - at, 0, 0, 0, 0});
      pieces_ = staging.add(pieces);
    }

    // One allocation: E, packed, P, Q, the orthogonalized Q, the deferral flag and the strips' arrival counters
    // (4-byte words, zeroed: no deferral, no arrivals), then the tables. P and the Qs start 16-byte aligned
    // (their rows are read as float4 where a rank is a multiple of 4); packed ends where P begins, so one
    // all-reduce takes both.
    auto align4 = [](size_t floats) { return (floats + 3) / 4 * 4; };
    const size_t p_at = align4(layout.bucket_elements + layout.uncompressed_elements);
    const size_t packed_at = p_at - layout.uncompressed_elements;
    const size_t q_at = align4(p_at + layout.p_elements);
    const size_t q_orth_at = align4(q_at + layout.q_elements);
    const size_t deferred_at = align4(q_orth_at + layout.q_elements);
    const size_t arrivals_at = deferred_at + 1;
    const size_t floats = arrivals_at + static_cast<size_t>(strips);
    const size_t float_bytes = (floats * sizeof(float) + 255) / 256 * 256;
    DDPX_CUDA_CHECK(cudaMalloc(&storage_, float_bytes + staging.bytes().size() + 1));
    DDPX_CUDA_CHECK(cudaMemset(storage_, 0, float_bytes));
    auto* tables = reinterpret_cast<unsigned char*>(storage_) + float_bytes;
    if (!staging.bytes().empty())
      DDPX_CUDA_CHECK(cudaMemcpy(tables, staging.bytes().data(), staging.bytes().size(), cudaMemcpyHostToDevice));
    error_ = storage_;
    packed_ = storage_ + packed_at;
    p_ = storage_ + p_at;
    q_ = storage_ + q_at;
    q_orth_ = storage_ + q_orth_at;
    deferred_ = reinterpret_cast<int*>(storage_ + deferred_at);
    arrivals_ = reinterpret_cast<unsigned*>(storage_ + arrivals_at);
    matrices_.bind(tables);
    segments_.bind(tables);
    finish_tasks_.bind(tables);
    segment_tasks_.bind(tables);
    for (Table<RowTask>& t : begin_tasks_) t.bind(tables);
    slab_tasks_.bind(tables);
    orth_p_.bind(tables);
    orth_q_.bind(tables);
    pieces_.bind(tables);
    if (partial_floats > 0) scratch_.reserve(static_cast<size_t>(partial_floats) * sizeof(float));
    // The memset and the pageable upload above ran on the legacy stream, which the hook's non-blocking streams do
    // not wait for (and a pageable cudaMemcpy may return before its DMA lands): finish them before any kernel reads
    // E or the tables. Construction happens in an eager step (the first compressed one), never under capture.
    DDPX_CUDA_CHECK(cudaDeviceSynchronize());
  }

  ~CudaPowerSgdMath() override { cudaFree(storage_); }
  CudaPowerSgdMath(const CudaPowerSgdMath&) = delete;
  CudaPowerSgdMath& operator=(const CudaPowerSgdMath&) = delete;

  float* packed_and_p() override { return packed_; }
  float* q() override { return q_; }

  // Into the orthogonalized Q's buffer, so that q_ keeps the previous step's Q for a deferred error update (Note
  // [Error feedback deferred to the next begin]); orthogonalize_q then works on it in place.
  void set_q(const std::vector<float>& host_q, void* stream) override {
    DDPX_CUDA_CHECK(cudaMemcpyAsync(q_orth_, host_q.data(), host_q.size() * sizeof(float), cudaMemcpyHostToDevice,
                                    as_stream(stream)));
    DDPX_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream)));  // host_q is temporary
    q_uploaded_ = true;
  }

  // The Q that begin multiplies by: the previous step's averaged Q (warm start) or the uploaded one, orthogonalized
  // into q_orth_; nothing when orthogonalize_q_ahead did it for this step already.
  void orthogonalize_q(void* stream) override {
    if (!q_ahead_ || q_uploaded_) orth_q_.launch(q_uploaded_ ? q_orth_ : q_, q_orth_, as_stream(stream));
    q_uploaded_ = false;
    q_ahead_ = false;
  }
  // Note [Q's orthogonalization beside the hook's chain] (ddp/powersgd_hook.cpp): the averaged Q into q_orth_,
  // which begin read earlier in this step on the hook's stream (the caller forks `stream` after the all-reduce of
  // q, which follows that begin); q_ itself is only read, by the update and the next begin alike.
  bool can_orthogonalize_q_ahead() const override { return true; }
  void orthogonalize_q_ahead(void* stream) override {
    orth_q_.launch(q_, q_orth_, as_stream(stream));
    q_ahead_ = true;
  }
  void orthogonalize_p(void* stream) override { orth_p_.launch(p_, p_, as_stream(stream)); }

  void begin(float* bucket, void* stream) override {
    for (int pass = 0; pass < passes_; ++pass) {
      const Table<RowTask>& tasks = begin_tasks_[pass];
      if (!tasks.size) continue;
      const int col0 = pass * kFactorChunk;
      auto launch = [&](auto kernel) {
        launch_after_producer("error feedback and P = M Q kernel", kernel, tasks.size, kThreads, 0, as_stream(stream),
                              bucket, error_, packed_, p_, q_orth_, q_, deferred_, matrices_.data, segments_.data,
                              tasks.data, col0, pass == 0);
      };
      switch (width_) {
        case 1: launch(begin_kernel<1>); break;
        case 2: launch(begin_kernel<2>); break;
        case 4: launch(begin_kernel<4>); break;
        default: launch(begin_kernel<8>); break;
      }
    }
  }

  void compute_q(const float*, void* stream) override { launch_compute_q(VectorEnding{}, 0, stream); }

  void finish(float* bucket, void* stream) override { launch_finish(bucket, stream); }

  // Note [A bucket's chain, one kernel per step of it]: the vectors' end of the step in compute_q's launch; E =
  // M - P Q^T for the matrices is formed by the next begin, which the flag tells so (Note [Error feedback
  // deferred to the next begin]).
  bool can_leave_factors() const override { return pieces_.size > 0; }
  void compute_q_leaving_factors(float* bucket, void* stream) override {
    DDPX_INTERNAL_ASSERT(can_leave_factors(), "PowerSGD: compute_q_leaving_factors on a bucket that cannot leave its "
                         "factors");
    const VectorEnding vectors{bucket,          error_, packed_, segments_.data, segment_tasks_.data,
                               segment_tasks_.size, deferred_};
    launch_compute_q(vectors, std::max(1u, segment_tasks_.size), stream);  // one block at least: the flag
  }
  LowRankGradients low_rank_gradients() const override {
    return {pieces_.data, static_cast<int>(pieces_.size), p_, q_, finish_width_};
  }

 private:
  // The slab blocks, then `vector_blocks` blocks of `vectors` (none for compute_q alone).
  void launch_compute_q(const VectorEnding& vectors, unsigned vector_blocks, void* stream) {
    const unsigned blocks = slab_tasks_.size + vector_blocks;
    if (!blocks) return;
    auto* partial = static_cast<float*>(scratch_.data());
    auto launch = [&](auto kernel) {
      launch_after_producer("M^T P kernel", kernel, blocks, kThreads, 0, as_stream(stream), error_, p_, partial, q_,
                            arrivals_, matrices_.data, slab_tasks_.data, slab_tasks_.size, vectors);
    };
    switch (width_) {
      case 1: launch(slab_kernel<1>); break;
      case 2: launch(slab_kernel<2>); break;
      case 4: launch(slab_kernel<4>); break;
      default: launch(slab_kernel<8>); break;
    }
  }

  void launch_finish(float* bucket, void* stream) {
    DDPX_INTERNAL_ASSERT(finish_tasks_.size > 0, "PowerSGD: a bucket with neither matrices nor vectors to finish");
    auto launch = [&](auto kernel) {
      launch_after_producer("P Q^T and error update kernel", kernel, finish_tasks_.size, kThreads, 0,
                            as_stream(stream), bucket, error_, packed_, p_, q_, matrices_.data, segments_.data,
                            finish_tasks_.data, deferred_);
    };
    switch (finish_width_) {
      case 0: launch(finish_kernel<0>); break;
      case 1: launch(finish_kernel<1>); break;
      case 2: launch(finish_kernel<2>); break;
      case 4: launch(finish_kernel<4>); break;
      default: launch(finish_kernel<8>); break;
    }
  }

  CompressionLayout layout_;
  DeviceScratch& scratch_;
  float* storage_ = nullptr;
  float *error_ = nullptr, *packed_ = nullptr, *p_ = nullptr, *q_ = nullptr;
  float* q_orth_ = nullptr;  // orthogonalize_q's output, begin's Q; q_ keeps the averaged Q (Note [Error feedback ...])
  int* deferred_ = nullptr;  // device: 1 while E still needs - P Q^T (compute_q_leaving_factors), 0 after finish
  unsigned* arrivals_ = nullptr;  // device: per strip of compute_q, its blocks arrived so far (0 between launches)
  bool q_uploaded_ = false;  // set_q put a fresh Q in q_orth_: orthogonalize it there
  bool q_ahead_ = false;     // orthogonalize_q_ahead wrote q_orth_ for the next begin
  int passes_ = 1, width_ = 1, finish_width_ = 1;
  Table<MatrixInfo> matrices_;
  Table<SegmentInfo> segments_;
  std::vector<Table<RowTask>> begin_tasks_;  // per factor pass; pass 0's is finish_tasks_
  Table<RowTask> finish_tasks_;
  Table<RowTask> segment_tasks_;  // finish_tasks_'s vector tasks (its tail)
  Table<SlabTask> slab_tasks_;
  OrthPlan orth_p_, orth_q_;
  Table<LowRankPiece> pieces_;  // empty: this bucket always writes P Q^T into the bucket
};

}  // namespace

std::unique_ptr<PowerSgdBucketMath> make_cuda_powersgd_math(const CompressionLayout& layout, DeviceScratch& scratch) {
  return std::make_unique<CudaPowerSgdMath>(layout, scratch);
}

}  // namespace ddpx
