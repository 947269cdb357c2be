// Exact-GELU kernels; see gelu.hpp. Both kernels run one 1024-thread block per SM (or fewer: the work bounds it).
// Note [GELU of bf16 by table]: a bf16 input has one of 65,536 values, so for bf16 the kernels look GELU and its
// derivative up instead of evaluating erff and expf (which bound the backward by instruction issue: 16 us for
// ViT-L/32's 1600 x 4096 even with its inputs in L2). The tables hold the fp32 value of the same device functions
// the fp32 path evaluates (gelu(), gelu_derivative()), for |x| in [2^-16, 16) and both signs; inputs outside that
// range (zero, tiny, huge, inf, NaN) are evaluated directly. So the bf16 path's fp32 intermediate is bit-identical
// to the fp32 path's on the same input, which tests/kernels/test_elementwise.cpp checks on every bf16 value.
// A block copies its 20 KB table from global memory (L2) to shared memory once, asynchronously, starting before it
// waits for the kernel before it (Note [Programmatic dependent launch], core/kernel_launch.cuh).
// The tables are filled once per device by a small kernel (ensure_tables()); see the function for graph capture.
#include <cuda_bf16.h>
#include <cuda_pipeline.h>

#include <array>
#include <atomic>
#include <initializer_list>
#include <mutex>
#include <type_traits>

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "core/kernel_launch.cuh"
#include "kernels/column_sum.hpp"
#include "kernels/device_utils.cuh"
#include "kernels/gelu.hpp"

namespace ddpx {
namespace {

using kernels::Pack;

constexpr int kThreads = 1024;
constexpr int kPacksPerThread = 8;  // forward: packs (16 or 8 bytes) a thread loads before it computes
// Backward: a block is kColumnThreads x kRowWorkers threads; thread (x, y) owns one pack of adjacent columns of its
// column block and rows y, y + kRowWorkers, ... of its row range, kRowsInFlight at a time.
constexpr int kColumnThreads = 256;
constexpr int kRowWorkers = kThreads / kColumnThreads;
constexpr int kRowsInFlight = 3;  // 4 spilled at 16-byte packs under the 64-register cap
// The backward's row ranges: ceil(kReferenceSms / column blocks) of them, so about one block per SM on an H100 or
// H200; the reference count rather than the device's, so the bias gradient's partial sums (one per row range) and
// therefore its bits are the same on every GPU.
constexpr int kRowRangeBlocks = kernels::kReferenceSms;

// Note [GELU of bf16 by table]: bf16 bit patterns (sign cleared) from 2^-16 up to, not including, 2^4.
constexpr uint32_t kTableFirst = (127u - 16u) << 7;
constexpr uint32_t kTableSpan = 20u << 7;  // 20 binades of 128 values
constexpr int kTableEntries = 2 * kTableSpan;  // positive, then negative
enum Table { kGeluTable = 0, kDerivativeTable = 1 };
__device__ float g_tables[2][kTableEntries];

// The arithmetic spelled with rounding intrinsics, so the table's entries (filled in one kernel) and the direct
// evaluations (inlined in others) round the same way whatever the compiler contracts.
__device__ __forceinline__ float normal_cdf(float x) {
  return __fmul_rn(0.5f, __fadd_rn(1.f, erff(__fmul_rn(x, 0.70710678118654752f))));
}
__device__ __forceinline__ float gelu(float x) { return __fmul_rn(x, normal_cdf(x)); }
__device__ __forceinline__ float gelu_derivative(float x) {
  const float pdf = __fmul_rn(0.39894228040143268f, expf(__fmul_rn(__fmul_rn(-0.5f, x), x)));
  return __fmaf_rn(x, pdf, normal_cdf(x));
}
template <Table kTable>
__device__ __forceinline__ float evaluate(float x) {
  return kTable == kGeluTable ? gelu(x) : gelu_derivative(x);
}

__global__ void fill_tables_kernel() {
  begin_after_producer();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= kTableEntries) return;
  const uint32_t sign = i < static_cast<int>(kTableSpan) ? 0u : 0x8000u;
  const float x = __uint_as_float((sign | (kTableFirst + i % kTableSpan)) << 16);
  g_tables[kGeluTable][i] = gelu(x);
  g_tables[kDerivativeTable][i] = gelu_derivative(x);
}

// x is a bf16 value widened to fp32 (its low 16 bits are zero).
template <Table kTable>
__device__ __forceinline__ float look_up(const float* table, float x) {
  const uint32_t bits = __float_as_uint(x) >> 16;
  const uint32_t index = (bits & 0x7fffu) - kTableFirst;  // wraps past kTableSpan below the range
  if (index < kTableSpan) return table[(bits >> 15) * kTableSpan + index];
  return evaluate<kTable>(x);
}

template <typename T>
constexpr bool kByTable = std::is_same_v<T, __nv_bfloat16>;

// The block's copy of one table (bf16 only; fp32 evaluates), in two halves: start_table_copy() issues
// asynchronous copies (cp.async) before the kernel waits for its producer, which the table allows (Note
// [Programmatic dependent launch]: the fill kernel is never launched right before an overlapping kernel), and
// finish_table_copy() waits for them and for the block's other threads.
template <typename T, Table kTable>
__device__ __forceinline__ void start_table_copy(float* shared) {
  if constexpr (kByTable<T>) {
    const float4* from = reinterpret_cast<const float4*>(g_tables[kTable]);
    for (int i = threadIdx.y * blockDim.x + threadIdx.x; i < kTableEntries / 4; i += blockDim.x * blockDim.y)
      __pipeline_memcpy_async(reinterpret_cast<float4*>(shared) + i, from + i, sizeof(float4));
    __pipeline_commit();
  }
}
template <typename T>
__device__ __forceinline__ void finish_table_copy() {
  if constexpr (kByTable<T>) {
    __pipeline_wait_prior(0);
    __syncthreads();
  }
}

template <typename T, Table kTable>
__device__ __forceinline__ float activation(const float* shared, float x) {
  if constexpr (kByTable<T>) return look_up<kTable>(shared, x);
  else return evaluate<kTable>(x);
}

// Thread t of the grid's n threads takes packs t, t + n, ..., kPacksPerThread of them per pass, all loaded before
// any is computed on: every thread gets the same count give or take one pass's remainder.
template <typename T, int kBytes>
__global__ void __launch_bounds__(kThreads) gelu_forward_kernel(const T* x, T* out, int64_t packs) {
  using P = Pack<T, kBytes>;
  __shared__ __align__(16) float table[kByTable<T> ? kTableEntries : 4];
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  const int64_t start = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  P in[kPacksPerThread];
  const auto load = [&](int64_t first) {
#pragma unroll
    for (int i = 0; i < kPacksPerThread; ++i)
      if (first + i * stride < packs) in[i].load(x + P::kElements * (first + i * stride));
  };
  start_table_copy<T, kGeluTable>(table);
  begin_after_producer();
  load(start);  // in flight while the table is copied
  finish_table_copy<T>();
  for (int64_t first = start; first < packs; first += kPacksPerThread * stride) {
    if (first != start) load(first);
#pragma unroll
    for (int i = 0; i < kPacksPerThread; ++i) {
      if (first + i * stride >= packs) break;
#pragma unroll
      for (int j = 0; j < P::kElements; ++j) in[i].set(j, activation<T, kGeluTable>(table, in[i].get(j)));
      in[i].store(out + P::kElements * (first + i * stride));
    }
  }
}

// Block (blockIdx.x, blockIdx.y): column packs [kColumnThreads * blockIdx.x, +kColumnThreads) of row range
// blockIdx.y ([rows * y / gridDim.y, rows * (y + 1) / gridDim.y)). Each thread sums its columns over its rows; the
// kRowWorkers sums are added in worker order in shared memory into the range's partial (fixed order: deterministic).
template <typename T, int kBytes>
__global__ void __launch_bounds__(kThreads) gelu_backward_kernel(const T* x, T* grad, int64_t rows, int64_t cols,
                                                                 float* partial) {
  using P = Pack<T, kBytes>;
  __shared__ __align__(16) float table[kByTable<T> ? kTableEntries : 4];
  __shared__ float sums[kRowWorkers - 1][kColumnThreads][P::kElements];
  const int64_t col = P::kElements * (static_cast<int64_t>(blockIdx.x) * kColumnThreads + threadIdx.x);
  const bool active = col < cols;
  const int64_t begin = rows * blockIdx.y / gridDim.y, end = rows * (blockIdx.y + 1) / gridDim.y;
  float sum[P::kElements] = {};
  P in[kRowsInFlight], g[kRowsInFlight];
  const int64_t start = begin + threadIdx.y;
  const auto load = [&](int64_t row) {
#pragma unroll
    for (int j = 0; j < kRowsInFlight; ++j) {
      const int64_t r = row + j * kRowWorkers;
      if (active && r < end) in[j].load(x + r * cols + col), g[j].load(grad + r * cols + col);
    }
  };
  start_table_copy<T, kDerivativeTable>(table);
  begin_after_producer();
  load(start);  // in flight while the table is copied
  finish_table_copy<T>();
  for (int64_t row = start; active && row < end; row += kRowsInFlight * kRowWorkers) {
    if (row != start) load(row);
#pragma unroll
    for (int j = 0; j < kRowsInFlight; ++j) {
      const int64_t r = row + j * kRowWorkers;
      if (r >= end) break;
#pragma unroll
      for (int i = 0; i < P::kElements; ++i) {
        const float v = g[j].get(i) * activation<T, kDerivativeTable>(table, in[j].get(i));
        sum[i] += v;
        g[j].set(i, v);
      }
      g[j].store(grad + r * cols + col);
    }
  }
  if (partial == nullptr) return;
  if (threadIdx.y > 0)
#pragma unroll
    for (int i = 0; i < P::kElements; ++i) sums[threadIdx.y - 1][threadIdx.x][i] = sum[i];
  __syncthreads();
  if (threadIdx.y != 0 || !active) return;
  for (int w = 0; w < kRowWorkers - 1; ++w)
#pragma unroll
    for (int i = 0; i < P::kElements; ++i) sum[i] += sums[w][threadIdx.x][i];
#pragma unroll
  for (int i = 0; i < P::kElements; ++i) partial[static_cast<int64_t>(blockIdx.y) * cols + col + i] = sum[i];
}

// 16-byte packs where the count and the pointers allow them, else 8-byte ones (4 elements: always allowed).
template <typename T>
bool sixteen_bytes(int64_t count, std::initializer_list<const void*> pointers) {
  if (count % (16 / static_cast<int64_t>(sizeof(T))) != 0) return false;
  for (const void* p : pointers)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  return true;
}

constexpr int kMostPackElements = 16 / static_cast<int>(sizeof(__nv_bfloat16));

// At least 1 for any cols > 0 (the scratch size asks with the widest pack, which may exceed cols).
int64_t column_blocks(int64_t cols, int elements) {
  return ((cols + elements - 1) / elements + kColumnThreads - 1) / kColumnThreads;
}

int64_t row_ranges(int64_t rows, int64_t cols, int elements) {
  const int64_t column = column_blocks(cols, elements);
  return std::max<int64_t>(1, std::min(rows, (kRowRangeBlocks + column - 1) / column));
}

constexpr int kMaxDevices = 256;

// Note [GELU of bf16 by table]: fills the current device's tables before its first bf16 launch, and says whether
// it enqueued the fill on `stream` just now (the launch after it must then not overlap it: Note [Programmatic
// dependent launch]). Eagerly, the fill is waited for once, so launches on any stream after it see the tables, and
// later calls only read the device's ready flag. While `stream` is being captured into a CUDA graph nothing may be
// waited for, so the fill is captured before the launch and the device is not marked ready: each replay refills the
// 40 KB (one small kernel) and an eager call still fills it.
template <typename T>
bool ensure_tables(cudaStream_t stream) {
  if constexpr (kByTable<T>) {
    static std::mutex mutex;
    static std::array<std::atomic<bool>, kMaxDevices> ready{};
    int device = 0;
    DDPX_CUDA_CHECK(cudaGetDevice(&device));
    const bool tracked = device < kMaxDevices;
    if (tracked && ready[device].load(std::memory_order_acquire)) return false;
    const std::lock_guard<std::mutex> lock(mutex);
    if (tracked && ready[device].load(std::memory_order_relaxed)) return false;
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    DDPX_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
    launch_after_producer("fill_tables_kernel", fill_tables_kernel, (kTableEntries + 255) / 256, 256, 0, stream);
    if (capture != cudaStreamCaptureStatusNone) return true;
    DDPX_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (tracked) ready[device].store(true, std::memory_order_release);
    return true;
  } else {
    return false;
  }
}

// One 1024-thread block per SM: the current device's SM count, asked once per device.
int resident_blocks() {
  static std::array<std::atomic<int>, kMaxDevices> sms{};
  int device = 0;
  DDPX_CUDA_CHECK(cudaGetDevice(&device));
  if (device < kMaxDevices)
    if (const int known = sms[device].load(std::memory_order_relaxed)) return known;
  int count = 0;
  DDPX_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
  if (device < kMaxDevices) sms[device].store(count, std::memory_order_relaxed);
  return count;
}

}  // namespace

template <typename T>
void gelu_forward(const T* x, T* out, int64_t n, cudaStream_t stream) {
  DDPX_REQUIRE(n % 4 == 0, "gelu_forward: element count {} must be a multiple of 4", n);
  if (n == 0) return;
  const bool after_fill = ensure_tables<T>(stream);
  const auto launch = [&](auto kernel, int elements) {
    const int64_t packs = n / elements;
    const int64_t blocks = std::min<int64_t>(resident_blocks(), (packs + kThreads - 1) / kThreads);
    launch_kernel("gelu_forward_kernel", !after_fill, kernel, static_cast<unsigned>(blocks), kThreads, 0, stream, x,
                  out, packs);
  };
  if (sixteen_bytes<T>(n, {x, out})) launch(gelu_forward_kernel<T, 16>, 16 / sizeof(T));
  else launch(gelu_forward_kernel<T, 8>, 8 / sizeof(T));
}

size_t gelu_backward_scratch_floats(int64_t rows, int64_t cols) {
  // Enough for every pack width: the widest pack in elements (16 bytes of bf16) gives the fewest column blocks and
  // so the most row ranges.
  return static_cast<size_t>(row_ranges(rows, cols, kMostPackElements) * cols) + column_sum_scratch_floats(cols);
}

template <typename T>
void gelu_backward(const T* x, T* grad, int64_t rows, int64_t cols, float* bias_grad, float* scratch,
                   size_t scratch_floats, cudaStream_t stream, bool overwrite_bias_grad, ColumnSumBatch* fold_into) {
  DDPX_REQUIRE(cols % 4 == 0, "gelu_backward: column count {} must be a multiple of 4", cols);
  if (rows == 0 || cols == 0) return;
  const bool wide = sixteen_bytes<T>(cols, {x, grad});
  const int elements = (wide ? 16 : 8) / static_cast<int>(sizeof(T));
  const int64_t ranges = row_ranges(rows, cols, elements);
  const size_t partial_floats = static_cast<size_t>(ranges * cols);
  if (bias_grad) {
    DDPX_REQUIRE(scratch && scratch_floats >= gelu_backward_scratch_floats(rows, cols),
                 "gelu_backward: scratch of {} floats, needs {}", scratch_floats,
                 gelu_backward_scratch_floats(rows, cols));
    DDPX_INTERNAL_ASSERT(partial_floats + column_sum_scratch_floats(cols) <= scratch_floats,
                         "gelu_backward: {} row ranges of {} columns outgrow gelu_backward_scratch_floats", ranges,
                         cols);
  }
  DDPX_REQUIRE(ranges <= 65535, "gelu_backward: {} row ranges exceed one launch's grid", ranges);
  const bool after_fill = ensure_tables<T>(stream);
  const dim3 grid(static_cast<unsigned>(column_blocks(cols, elements)), static_cast<unsigned>(ranges));
  const dim3 block(kColumnThreads, kRowWorkers);
  float* partial = bias_grad ? scratch : nullptr;
  launch_kernel("gelu_backward_kernel", !after_fill, wide ? gelu_backward_kernel<T, 16> : gelu_backward_kernel<T, 8>,
                grid, block, 0, stream, x, grad, rows, cols, partial);
  if (!bias_grad) return;
  ColumnSumArgs<float> sum;
  sum.in = scratch, sum.ld = cols, sum.rows = ranges, sum.cols = cols;
  sum.outputs[0] = bias_grad;
  sum.overwrite = overwrite_bias_grad;
  sum.scratch = scratch + partial_floats, sum.scratch_floats = scratch_floats - partial_floats;
  if (fold_into) fold_into->add(sum);
  else column_sum_add(sum, stream);
}

template void gelu_forward<float>(const float*, float*, int64_t, cudaStream_t);
template void gelu_forward<__nv_bfloat16>(const __nv_bfloat16*, __nv_bfloat16*, int64_t, cudaStream_t);
template void gelu_backward<float>(const float*, float*, int64_t, int64_t, float*, float*, size_t, cudaStream_t,
                                  bool, ColumnSumBatch*);
template void gelu_backward<__nv_bfloat16>(const __nv_bfloat16*, __nv_bfloat16*, int64_t, int64_t, float*, float*,
                                           size_t, cudaStream_t, bool, ColumnSumBatch*);

}  // namespace ddpx
