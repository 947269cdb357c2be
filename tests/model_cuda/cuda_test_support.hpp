// What the CUDA model tests of every family share: seeded random inputs, a relative error that a NaN always fails,
// an owned CUDA stream, and the tolerance triple a precision is checked with against the CPU reference.
#pragma once
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/cuda_check.hpp"
#include "core/rng.hpp"

namespace ddpx::cuda_test {

// n standard normal draws of ddpx::Rng(seed), as float.
inline std::vector<float> random_normal(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.normal());
  return v;
}

// ||got - want|| / ||want|| (or / 1 when want is all zero), infinite as soon as got holds a NaN.
template <typename A, typename B>
double relative_error(const A* got, const B* want, size_t n) {
  double diff = 0, ref = 0;
  for (size_t i = 0; i < n; ++i) {
    const double g = got[i], w = want[i];
    if (std::isnan(g)) return INFINITY;
    diff += (g - w) * (g - w);
    ref += w * w;
  }
  return std::sqrt(diff / (ref > 0 ? ref : 1.0));
}

class Stream {
 public:
  Stream() { DDPX_CUDA_CHECK(cudaStreamCreate(&stream_)); }
  ~Stream() { cudaStreamDestroy(stream_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

using Spans = std::vector<std::pair<size_t, size_t>>;

struct Tolerance {
  double logits, loss, grads;
};

}  // namespace ddpx::cuda_test
