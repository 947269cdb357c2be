// PowerSGD compression layout and initial factors.
#include "comm_plan/powersgd_layout.hpp"

#include <algorithm>

#include "comm_plan/bucket_plan.hpp"
#include "core/rng.hpp"

namespace ddpx {

CompressionLayout plan_compression(const GradTensor* tensors, size_t count, size_t bucket_begin,
                                   size_t bucket_elements, int64_t rank, double min_compression_rate) {
  CompressionLayout layout;
  layout.bucket_elements = bucket_elements;
  for (size_t i = 0; i < count; ++i) {
    const GradTensor& tensor = tensors[i];
    const size_t offset = tensor.offset - bucket_begin;
    if (tensor.shape.size() >= 2) {
      const int64_t rows = tensor.shape[0];
      const int64_t cols = static_cast<int64_t>(tensor.numel) / rows;
      const int64_t matrix_rank = std::min({rows, cols, rank});
      const double compressed = static_cast<double>(rows + cols) * static_cast<double>(matrix_rank);
      if (compressed * min_compression_rate < static_cast<double>(rows * cols)) {
        layout.matrices.push_back({offset, rows, cols, matrix_rank, layout.p_elements, layout.q_elements});
        layout.p_elements += static_cast<size_t>(rows * matrix_rank);
        layout.q_elements += static_cast<size_t>(cols * matrix_rank);
        continue;
      }
    }
    layout.uncompressed.push_back({offset, tensor.numel});
    layout.uncompressed_elements += tensor.numel;
  }
  return layout;
}

CompressionLayout plan_compression(const BucketPlan& plan, size_t bucket, int64_t rank, double min_compression_rate) {
  const Bucket& b = plan[bucket];
  return plan_compression(plan.tensors().data() + b.first_tensor, b.end_tensor - b.first_tensor, b.begin, b.numel(),
                          rank, min_compression_rate);
}

std::vector<float> powersgd_initial_q(const CompressionLayout& layout, uint64_t seed, size_t bucket_index,
                                      int64_t draw) {
  Rng rng(seed ^ (0x9e3779b97f4a7c15ULL * (bucket_index + 1)) ^ (0xc2b2ae3d27d4eb4fULL * static_cast<uint64_t>(draw)));
  std::vector<float> q(layout.q_elements);
  for (float& value : q) value = static_cast<float>(rng.normal());
  return q;
}

}  // namespace ddpx
