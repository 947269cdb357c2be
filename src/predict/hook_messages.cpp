// Wire sizes per hook (see hook_messages.hpp).
#include "predict/hook_messages.hpp"

#include <algorithm>

namespace ddpx::predict {

PowerSgdSizes powersgd_sizes(const std::vector<GradientTensorInfo>& tensors, const TensorRange& bucket,
                             int64_t rank, double min_compression_rate) {
  PowerSgdSizes sizes;
  for (size_t i = bucket.first; i < bucket.end; ++i) {
    const GradientTensorInfo& t = tensors[i];
    if (t.shape.size() >= 2) {
      const int64_t rows = t.shape[0], cols = t.numel / rows;
      const int64_t matrix_rank = std::min({rows, cols, rank});
      const double compressed = static_cast<double>(rows + cols) * static_cast<double>(matrix_rank);
      if (compressed * min_compression_rate < static_cast<double>(rows) * static_cast<double>(cols)) {
        sizes.p_elements += rows * matrix_rank;
        sizes.q_elements += cols * matrix_rank;
        ++sizes.matrices;
        continue;
      }
    }
    sizes.uncompressed_elements += t.numel;
  }
  return sizes;
}

std::vector<int64_t> hook_messages(const HookSpec& hook, const std::vector<GradientTensorInfo>& tensors,
                                   const TensorRange& bucket, int64_t bucket_elements) {
  switch (hook.kind) {
    case HookKind::allreduce: return {bucket_elements * 4};
    case HookKind::fp16:
    case HookKind::bf16: return {bucket_elements * 2};
    case HookKind::powersgd: {
      const PowerSgdSizes s = powersgd_sizes(tensors, bucket, hook.powersgd_rank);
      if (s.matrices == 0) return {s.uncompressed_elements * 4};
      return {(s.uncompressed_elements + s.p_elements) * 4, s.q_elements * 4};
    }
  }
  return {};
}

}  // namespace ddpx::predict
