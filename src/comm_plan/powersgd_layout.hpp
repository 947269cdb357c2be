// PowerSGD compression layout of one bucket: which tensors are compressed, as which matrices, and where their
// low-rank factors live. Pure functions of the bucket's tensors and the options, the same on every rank; ddp's hook
// compresses by it and the hook catalogue's wire messages (hook_catalogue.hpp) are sized by it.
// Rules (PyTorch's powerSGD_hook): a tensor with 2+ dims is viewed as a matrix [rows = shape[0], cols =
// numel / rows]; its rank is min(rows, cols, R); it is compressed iff (rows + cols) * rank * min_compression_rate
// < rows * cols. Every other tensor (1-D, or too small to gain) goes uncompressed, packed in bucket order.
// P factors are packed matrix after matrix, each [rows, rank] row-major; Q factors likewise, each [cols, rank].
// This header stays C++17 (ddp's CUDA math includes it), hence the forward declarations.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ddpx {

struct GradTensor;  // comm_plan/bucket_plan.hpp
class BucketPlan;

struct LowRankMatrix {
  size_t offset = 0;  // in the bucket (elements from its begin)
  int64_t rows = 0, cols = 0, rank = 0;
  size_t p_offset = 0, q_offset = 0;  // in the packed P and Q buffers
};

struct BucketSegment {
  size_t offset = 0;  // in the bucket
  size_t numel = 0;
};

struct CompressionLayout {
  size_t bucket_elements = 0;
  std::vector<LowRankMatrix> matrices;
  std::vector<BucketSegment> uncompressed;  // packed back to back, in bucket order
  size_t p_elements = 0, q_elements = 0, uncompressed_elements = 0;
};

// The layout of the bucket spanning elements [bucket_begin, bucket_begin + bucket_elements) of the gradient buffer
// and holding tensors[0, count) (their offsets are in the whole buffer).
CompressionLayout plan_compression(const GradTensor* tensors, size_t count, size_t bucket_begin,
                                   size_t bucket_elements, int64_t rank, double min_compression_rate);
// The layout of the plan's bucket `bucket`.
CompressionLayout plan_compression(const BucketPlan& plan, size_t bucket, int64_t rank, double min_compression_rate);

// The initial Q factors of a bucket (q_elements floats): standard normal draws of ddpx::Rng seeded from
// (seed, bucket index, draw), matrix after matrix in layout order. `draw` is 0 with warm start; without warm
// start it is the step, so each step gets fresh factors. Identical on every rank by construction.
std::vector<float> powersgd_initial_q(const CompressionLayout& layout, uint64_t seed, size_t bucket_index,
                                      int64_t draw);

}  // namespace ddpx
