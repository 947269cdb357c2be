// What the CUDA model tests of every family share: seeded random inputs, a relative error that a NaN always fails,
// an owned CUDA stream, the tolerance triple a precision is checked with against the CPU reference, the check
// that a backward after zero_grads() wrote the tensors and left the padding zero, and the check of bf16 weight
// gradients and the update that widens them.
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/cuda_check.hpp"
#include "core/half_precision.hpp"
#include "core/rng.hpp"
#include "kernels/optimizer.hpp"
#include "model/flat_layout.hpp"
#include "support/numeric.hpp"

namespace ddpx::cuda_test {

// n standard normal draws of ddpx::Rng(seed), as float.
inline std::vector<float> random_normal(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.normal());
  return v;
}

// ||got - want|| / ||want|| (or / 1 when want is all zero), infinite as soon as got holds a NaN.
using testing::relative_error;

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

// Note [bf16 weight gradients in their fp32 slots] (model_cuda/cuda_model.hpp). `fp32_grads` and `packed_grads`
// are the gradient buffers of two models that ran the same forward_backward after zero_grads(), the second after
// use_bf16_weight_gradients() (its `regions`). Checks:
//  - each region's bf16 values (the first half of its fp32 slots) are its fp32 gradients rounded: every one within
//    one bf16 step of the fp32 value, and at least 99% equal to the fp32 value rounded to nearest even (the GEMM
//    rounds its own fp32 sum, which another algorithm may have added in another order);
//  - every element outside the regions equals the fp32 model's bit for bit (the same kernels wrote them);
//  - the SGD step without momentum that followed (`params_before` -> `params_after`, learning rate `lr`) is
//    fma(-lr, g, p) with g the widened bf16 value in the regions and the fp32 value elsewhere, bit for bit.
inline void expect_bf16_weight_gradients(const std::vector<PackedBf16Region>& regions,
                                         const std::vector<float>& fp32_grads, const std::vector<float>& packed_grads,
                                         const std::vector<float>& params_before,
                                         const std::vector<float>& params_after, float lr, const std::string& what) {
  ASSERT_FALSE(regions.empty()) << what;
  std::vector<float> used(fp32_grads);  // the gradient the update must have read
  std::vector<bool> in_region(fp32_grads.size(), false);
  size_t elements = 0, rounded_alike = 0, outside_differ = 0, updates_differ = 0;
  for (const PackedBf16Region& r : regions) {
    const auto* bits = reinterpret_cast<const uint16_t*>(packed_grads.data() + r.offset);
    float largest = 0;
    for (long long i = 0; i < r.numel; ++i) largest = std::max(largest, std::fabs(fp32_grads[r.offset + i]));
    for (long long i = 0; i < r.numel; ++i) {
      const size_t e = static_cast<size_t>(r.offset + i);
      const float want = fp32_grads[e], got = bf16_to_float(bits[i]);
      // One bf16 step at the fp32 value, and at least 1e-6 of the tensor's largest (sums that cancel to near 0
      // differ by more than their own ulp between summation orders).
      const float step =
          std::max(want == 0.f ? 0.f : std::ldexp(1.0f, std::ilogb(want) - 7), 1e-6f * largest);
      ASSERT_LE(std::fabs(got - want), step) << what << ": bf16 gradient at " << e << " is " << got << ", fp32 "
                                             << want;
      rounded_alike += got == bf16_to_float(float_to_bf16(want));
      ++elements;
      used[e] = got;
      in_region[e] = true;
    }
  }
  EXPECT_GE(rounded_alike, elements * 99 / 100) << what << ": " << rounded_alike << " of " << elements
                                                << " bf16 gradients are the fp32 ones rounded";
  for (size_t e = 0; e < fp32_grads.size(); ++e) {
    if (!in_region[e]) outside_differ += packed_grads[e] != fp32_grads[e];
    updates_differ += params_after[e] != std::fmaf(-lr, used[e], params_before[e]);
  }
  EXPECT_EQ(outside_differ, 0u) << what << ": gradients outside the bf16 regions differ from the fp32 model's";
  EXPECT_EQ(updates_differ, 0u) << what << ": the update differs from fma(-lr, widened gradient, parameter)";
  EXPECT_NE(params_after, params_before) << what << ": the update moved the parameters";
}

}  // namespace ddpx::cuda_test
