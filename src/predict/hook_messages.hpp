// What each hook puts on the wire for one bucket: the sizes of its all-reduce calls, in order.
// Guarantees:
//  - allreduce: one call of the bucket's elements (padding included) in fp32. fp16, bf16: one call of 2 bytes per
//    element.
//  - powersgd:R follows ddp/powersgd_layout.hpp's rule (PyTorch's powerSGD_hook): a tensor of 2+ dims is a
//    matrix [shape[0], numel/shape[0]] of rank min(rows, cols, R), compressed iff (rows + cols) * rank * 2 <
//    rows * cols; ddpx then makes two calls, the uncompressed tensors and every P [rows, rank] together, then every
//    Q [cols, rank], all fp32. A bucket where nothing compresses makes one call of its uncompressed tensors.
//    (tests/predict checks these sizes against ddp's plan_compression.)
#pragma once
#include <cstdint>
#include <vector>

#include "predict/hook_spec.hpp"
#include "predict/measured_step.hpp"

namespace ddpx::predict {

struct PowerSgdSizes {
  int64_t uncompressed_elements = 0, p_elements = 0, q_elements = 0, matrices = 0;
};

PowerSgdSizes powersgd_sizes(const std::vector<GradientTensorInfo>& tensors, const TensorRange& bucket,
                             int64_t rank, double min_compression_rate = 2.0);

// Byte sizes of the bucket's all-reduce calls, in the order the hook makes them.
std::vector<int64_t> hook_messages(const HookSpec& hook, const std::vector<GradientTensorInfo>& tensors,
                                   const TensorRange& bucket, int64_t bucket_elements);

}  // namespace ddpx::predict
