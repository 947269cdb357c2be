// nccl-tests-style all-reduce measurement (see collective_bench.hpp).
#include "cli/collective_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "core/half_precision.hpp"
#include "core/internal_assert.hpp"
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
  static constexpr size_t kTextBytes = 256;  // gather_text's slot per rank
  void* buffer = nullptr;  // input: max_bytes in the communicator's memory
  void* output = nullptr;  // out-of-place result: max_bytes in the communicator's memory
  void* stats = nullptr;   // stats_bytes in the communicator's memory: times and texts
  size_t stats_bytes;      // (n + 1) doubles, or (n + 1) text slots, whichever is larger
  std::vector<uint8_t> host;  // device: staging for the check; host: the input itself
  std::vector<uint8_t> host_output, host_stats;  // host backends: the output and stats themselves
#ifdef DDPX_HAVE_CUDA
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
#endif

  Impl(Communicator& c, size_t bytes)
      : comm(c),
        max_bytes(bytes),
        device(c.buffer_memory() == BufferMemory::cuda),
        stats_bytes(std::max((c.size() + 1) * sizeof(double), (c.size() + 1) * kTextBytes)),
        host(bytes) {
    if (!device) {
      host_output.resize(bytes);
      host_stats.resize(stats_bytes);
      buffer = host.data();
      output = host_output.data();
      stats = host_stats.data();
      return;
    }
#ifdef DDPX_HAVE_CUDA
    DDPX_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    DDPX_CUDA_CHECK(cudaEventCreate(&start));
    DDPX_CUDA_CHECK(cudaEventCreate(&stop));
    DDPX_CUDA_CHECK(cudaMalloc(&buffer, max_bytes));
    DDPX_CUDA_CHECK(cudaMalloc(&output, max_bytes));
    DDPX_CUDA_CHECK(cudaMalloc(&stats, stats_bytes));
#else
    DDPX_INTERNAL_FAIL("a device communicator in a build without CUDA");
#endif
  }

  ~Impl() {
#ifdef DDPX_HAVE_CUDA
    if (device) {  // teardown: errors here have nobody to report to
      cudaFree(buffer);
      cudaFree(output);
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

  // One sum of the input: into itself, or into the output.
  void sum(size_t count, CommDType dtype, bool in_place) {
    if (in_place) {
      comm.all_reduce(buffer, count, dtype, ReduceOp::sum, stream_handle());
    } else {
      comm.all_reduce_out_of_place(buffer, output, count, dtype, ReduceOp::sum, stream_handle());
    }
  }

  double timed_ms(size_t count, CommDType dtype, int iters, bool in_place) {
    if (!device) {
      const auto begin = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; ++i) sum(count, dtype, in_place);
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
    }
#ifdef DDPX_HAVE_CUDA
    DDPX_CUDA_CHECK(cudaEventRecord(start, stream));
    for (int i = 0; i < iters; ++i) sum(count, dtype, in_place);
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

CollectiveTiming AllreduceBench::measure(size_t count, CommDType dtype, int warmup, int iters, bool in_place) {
  Impl& b = *impl_;
  const size_t bytes = count * comm_dtype_size(dtype);
  DDPX_INTERNAL_ASSERT(count > 0 && bytes <= b.max_bytes && iters >= 1 && warmup >= 0,
                       "all-reduce bench of {} elements ({} bytes, buffer {}) with {} iterations", count, bytes,
                       b.max_bytes, iters);
  b.zero(bytes);
  for (int i = 0; i < warmup; ++i) b.sum(count, dtype, in_place);
  b.sync();
  b.comm.barrier();
  const double mean_ms = b.timed_ms(count, dtype, iters, in_place) / iters;

  const int n = b.comm.size();
  fill_elements(b.host.data(), count, dtype, static_cast<float>(b.comm.rank() + 1));
  b.copy(b.buffer, b.host.data(), bytes, true);
  b.sum(count, dtype, in_place);
  b.copy(b.host.data(), in_place ? b.buffer : b.output, bytes, false);
  const int64_t wrong = count_differing(b.host.data(), count, dtype, static_cast<float>(n * (n + 1) / 2));

  // Slot r holds rank r's time, slot n the wrong count; a sum hands every rank all of them.
  std::vector<double> local(n + 1, 0.0);
  local[b.comm.rank()] = mean_ms;
  local[n] = static_cast<double>(wrong);
  b.copy(b.stats, local.data(), local.size() * sizeof(double), true);
  b.comm.all_reduce(b.stats, local.size(), CommDType::f64, ReduceOp::sum, b.stream_handle());
  b.copy(local.data(), b.stats, local.size() * sizeof(double), false);
  return {std::vector<double>(local.begin(), local.begin() + n), static_cast<int64_t>(std::llround(local[n]))};
}

std::vector<std::string> AllreduceBench::gather_text(const std::string& mine) {
  Impl& b = *impl_;
  const size_t slot = Impl::kTextBytes;
  const int n = b.comm.size();
  std::vector<char> all((n + 1) * slot, '\0');  // slot 0: this rank's text; slots 1..n: every rank's
  std::copy_n(mine.data(), std::min(mine.size(), slot - 1), all.data());
  b.copy(b.stats, all.data(), slot, true);
  b.comm.all_gather(b.stats, static_cast<char*>(b.stats) + slot, slot, CommDType::u8, b.stream_handle());
  b.copy(all.data(), b.stats, all.size(), false);
  std::vector<std::string> texts;
  for (int r = 0; r < n; ++r) texts.emplace_back(all.data() + (r + 1) * slot);  // each slot ends in '\0'
  return texts;
}

BenchDevice AllreduceBench::device() const {
  BenchDevice out;
#ifdef DDPX_HAVE_CUDA
  if (impl_->device) {
    int index = 0;
    cudaDeviceProp prop{};
    DDPX_CUDA_CHECK(cudaGetDevice(&index));
    DDPX_CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
    out.index = index;
    out.bus_id = fmt::format("{:04x}:{:02x}:{:02x}", prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
    out.name = prop.name;
  }
#endif
  return out;
}

}  // namespace ddpx::cli
