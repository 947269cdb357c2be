// nccl-tests-style all-reduce measurement (see collective_bench.hpp).
#include "cli/collective_bench.hpp"

#include <chrono>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "dist/half_precision.hpp"
#ifdef DDPX_HAVE_CUDA
#include <cuda_runtime.h>

#include "core/cuda_check.hpp"
#endif

namespace ddpx::cli {

void fill_elements(void* data, size_t count, CommDType dtype, float value) {
  switch (dtype) {
    case CommDType::f32: {
      float* out = static_cast<float*>(data);
      for (size_t i = 0; i < count; ++i) out[i] = value;
      return;
    }
    case CommDType::f16:
    case CommDType::bf16: {
      const uint16_t bits = dtype == CommDType::f16 ? float_to_half(value) : float_to_bf16(value);
      uint16_t* out = static_cast<uint16_t*>(data);
      for (size_t i = 0; i < count; ++i) out[i] = bits;
      return;
    }
    default:
      DDPX_INTERNAL_FAIL("all-reduce bench supports f32, f16 and bf16, not {}", comm_dtype_name(dtype));
  }
}

int64_t count_differing(const void* data, size_t count, CommDType dtype, float expected) {
  int64_t wrong = 0;
  if (dtype == CommDType::f32) {
    const float* in = static_cast<const float*>(data);
    for (size_t i = 0; i < count; ++i) wrong += in[i] != expected;
    return wrong;
  }
  DDPX_INTERNAL_ASSERT(dtype == CommDType::f16 || dtype == CommDType::bf16,
                       "all-reduce bench supports f32, f16 and bf16, not {}", comm_dtype_name(dtype));
  const uint16_t* in = static_cast<const uint16_t*>(data);
  for (size_t i = 0; i < count; ++i)
    wrong += (dtype == CommDType::f16 ? half_to_float(in[i]) : bf16_to_float(in[i])) != expected;
  return wrong;
}

struct AllreduceBench::Impl {
  Communicator& comm;
  size_t max_bytes;
  bool device;
  void* buffer = nullptr;  // max_bytes in the communicator's memory
  void* stats = nullptr;   // 2 doubles in the communicator's memory
  std::vector<uint8_t> host;  // device: staging for the check; host: the buffer itself
  double host_stats[2] = {0, 0};
#ifdef DDPX_HAVE_CUDA
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
#endif

  Impl(Communicator& c, size_t bytes)
      : comm(c), max_bytes(bytes), device(c.buffer_memory() == BufferMemory::cuda), host(bytes) {
    if (!device) {
      buffer = host.data();
      stats = host_stats;
      return;
    }
#ifdef DDPX_HAVE_CUDA
    DDPX_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    DDPX_CUDA_CHECK(cudaEventCreate(&start));
    DDPX_CUDA_CHECK(cudaEventCreate(&stop));
    DDPX_CUDA_CHECK(cudaMalloc(&buffer, max_bytes));
    DDPX_CUDA_CHECK(cudaMalloc(&stats, 2 * sizeof(double)));
#else
    DDPX_INTERNAL_FAIL("a device communicator in a build without CUDA");
#endif
  }

  ~Impl() {
#ifdef DDPX_HAVE_CUDA
    if (device) {  // teardown: errors here have nobody to report to
      cudaFree(buffer);
      cudaFree(stats);
      cudaEventDestroy(start);
      cudaEventDestroy(stop);
      cudaStreamDestroy(stream);
    }
#endif
  }

  void* stream_handle() {
#ifdef DDPX_HAVE_CUDA
    return stream;
#else
    return nullptr;
#endif
  }

  void sync() {
#ifdef DDPX_HAVE_CUDA
    if (device) DDPX_CUDA_CHECK(cudaStreamSynchronize(stream));
#endif
  }

  void copy(void* to, const void* from, size_t bytes, bool to_device) {
    if (!device) {
      if (to != from) std::memcpy(to, from, bytes);
      return;
    }
#ifdef DDPX_HAVE_CUDA
    DDPX_CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost,
                                    stream));
    DDPX_CUDA_CHECK(cudaStreamSynchronize(stream));
#endif
  }

  void zero(size_t bytes) {
    if (!device) {
      std::memset(buffer, 0, bytes);
      return;
    }
#ifdef DDPX_HAVE_CUDA
    DDPX_CUDA_CHECK(cudaMemsetAsync(buffer, 0, bytes, stream));
#endif
  }

  double timed_ms(size_t count, CommDType dtype, int iters) {
    if (!device) {
      const auto begin = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; ++i) comm.all_reduce(buffer, count, dtype, ReduceOp::sum, nullptr);
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
    }
#ifdef DDPX_HAVE_CUDA
    DDPX_CUDA_CHECK(cudaEventRecord(start, stream));
    for (int i = 0; i < iters; ++i) comm.all_reduce(buffer, count, dtype, ReduceOp::sum, stream);
    DDPX_CUDA_CHECK(cudaEventRecord(stop, stream));
    DDPX_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    DDPX_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    return ms;
#else
    return 0;
#endif
  }
};

AllreduceBench::AllreduceBench(Communicator& comm, size_t max_bytes)
    : impl_(std::make_unique<Impl>(comm, max_bytes)) {}

AllreduceBench::~AllreduceBench() = default;

CollectiveTiming AllreduceBench::measure(size_t count, CommDType dtype, int warmup, int iters) {
  Impl& b = *impl_;
  const size_t bytes = count * comm_dtype_size(dtype);
  DDPX_INTERNAL_ASSERT(count > 0 && bytes <= b.max_bytes && iters >= 1 && warmup >= 0,
                       "all-reduce bench of {} elements ({} bytes, buffer {}) with {} iterations", count, bytes,
                       b.max_bytes, iters);
  b.zero(bytes);
  for (int i = 0; i < warmup; ++i) b.comm.all_reduce(b.buffer, count, dtype, ReduceOp::sum, b.stream_handle());
  b.sync();
  b.comm.barrier();
  const double mean_ms = b.timed_ms(count, dtype, iters) / iters;

  const int n = b.comm.size();
  fill_elements(b.host.data(), count, dtype, static_cast<float>(b.comm.rank() + 1));
  b.copy(b.buffer, b.host.data(), bytes, true);
  b.comm.all_reduce(b.buffer, count, dtype, ReduceOp::sum, b.stream_handle());
  b.copy(b.host.data(), b.buffer, bytes, false);
  const int64_t wrong = count_differing(b.host.data(), count, dtype, static_cast<float>(n * (n + 1) / 2));

  double local[2] = {mean_ms, static_cast<double>(wrong)};
  b.copy(b.stats, local, sizeof local, true);
  b.comm.all_reduce(b.stats, 2, CommDType::f64, ReduceOp::max, b.stream_handle());
  b.copy(local, b.stats, sizeof local, false);
  return {local[0], static_cast<int64_t>(local[1])};
}

}  // namespace ddpx::cli
