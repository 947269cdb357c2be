// What the CUDA model tests of every family share: seeded random inputs, a relative error that a NaN always fails,
// an owned CUDA stream, the tolerance triple a precision is checked with against the CPU reference, and the check
// that a backward after zero_grads() wrote the tensors and left the padding zero.
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/cuda_check.hpp"
#include "core/rng.hpp"
#include "model/flat_layout.hpp"

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

// Gradients over `layout` after zero_grads() and a backward: the padding between tensors stays zero (never
// written) and more than half the buffer is non-zero (the backward wrote its tensors).
inline void expect_tensors_written_padding_clean(const FlatLayout& layout, const std::vector<float>& grads,
                                                 const std::string& what) {
  std::vector<bool> in_tensor(grads.size(), false);
  for (const TensorSlot& t : layout.tensors())
    for (size_t i = t.offset; i < t.offset + t.numel; ++i) in_tensor[i] = true;
  size_t dirty_padding = 0, nonzero = 0;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!in_tensor[i]) dirty_padding += grads[i] != 0.f;
    else nonzero += grads[i] != 0.f;
  }
  EXPECT_EQ(dirty_padding, 0u) << what;
  EXPECT_GT(nonzero, grads.size() / 2) << what << ": the backward wrote gradients";
}

}  // namespace ddpx::cuda_test
