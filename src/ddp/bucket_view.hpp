// BucketView: what a communication hook sees of one bucket: a span of the gradient buffer and its tensors.
// Guarantees: `data` points at element `begin` of the gradient buffer (host or device memory as `device` says);
// the span [begin, end) is the same every step for a given bucket index, so hooks may keep per-bucket state
// (error feedback, low-rank factors) keyed by `index`. Tensor offsets are relative to the whole buffer.
#pragma once
#include <cstddef>
#include <span>

#include "comm_plan/bucket_plan.hpp"

namespace ddpx {

enum class GradDevice { cpu, cuda };

struct BucketView {
  size_t index = 0;
  float* data = nullptr;
  size_t begin = 0, end = 0;
  std::span<const GradTensor> tensors;
  GradDevice device = GradDevice::cpu;

  size_t numel() const { return end - begin; }
  float* tensor_data(const GradTensor& tensor) const { return data + (tensor.offset - begin); }
};

}  // namespace ddpx
