// Shared by the small CUDA timing programs in bench/ (attention_timing, matmul_timing): the median of repeated
// calls timed with CUDA events (on the default stream unless given one), and device buffers filled with
// reproducible uniform [-1, 1) values. Measurement helpers only: nothing here is used by ddpx itself.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/cuda_check.hpp"

namespace ddpx::bench {

// Median over `repeat` calls of `call`, in microseconds, each timed alone (an event pair on `stream` and a
// synchronize); a call may fork other streams from `stream` as long as it joins them back.
template <typename Call>
double median_us(int repeat, Call&& call, cudaStream_t stream = nullptr) {
  cudaEvent_t start, stop;
  DDPX_CUDA_CHECK(cudaEventCreate(&start));
  DDPX_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<float> times;
  for (int i = 0; i < repeat; ++i) {
    DDPX_CUDA_CHECK(cudaEventRecord(start, stream));
    call();
    DDPX_CUDA_CHECK(cudaEventRecord(stop, stream));
    DDPX_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.f;
    DDPX_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  DDPX_CUDA_CHECK(cudaEventDestroy(start));
  DDPX_CUDA_CHECK(cudaEventDestroy(stop));
  std::nth_element(times.begin(), times.begin() + repeat / 2, times.end());
  return 1e3 * times[repeat / 2];
}

// data[0..n) = uniform values in [-1, 1) from a generator seeded by `seed`, converted to T, copied to the device.
template <typename T>
void fill_uniform(T* data, int64_t n, uint64_t seed) {
  std::vector<T> host(n);
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& v : host) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    v = static_cast<T>(static_cast<float>((state >> 40) & 0xFFFF) / 65536.f * 2.f - 1.f);
  }
  DDPX_CUDA_CHECK(cudaMemcpy(data, host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
}

}  // namespace ddpx::bench
