// BucketPlan: how the flat gradient buffer is cut into communication buckets.
// Guarantees:
//  - Input tensors are in buffer order (= backward order: the first tensor's gradient is final first), sorted by
//    offset and non-overlapping; anything else is a ddpx::Error naming the tensor.
//  - Buckets are contiguous, in buffer order, cover every tensor exactly once and never split a tensor. Bucket k
//    spans [begin, end) in elements: from its first tensor's offset to the next bucket's begin (padding between
//    tensors travels with the bucket before it; it is zero and costs little); the last ends at its last tensor.
//  - Sizes follow PyTorch DDP: tensors join the open bucket while its tensor bytes stay within the cap; the first
//    bucket has its own, smaller cap (PyTorch: 1 MiB first, 25 MiB after); a tensor larger than the cap gets a
//    bucket of its own; a cap larger than the model gives one bucket (the seed's bucket_cap_mb=2000).
//  - Plans are values: comparable, printable as a table, and summarized by signature() for agreement checks.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ddpx {

struct GradTensor {
  std::string name;
  size_t offset = 0;  // elements from the start of the gradient buffer
  size_t numel = 0;
  std::vector<int64_t> shape;  // empty or with product == numel
  bool operator==(const GradTensor&) const = default;
};

struct Bucket {
  size_t begin = 0, end = 0;                // elements of the gradient buffer, padding included
  size_t first_tensor = 0, end_tensor = 0;  // tensors [first_tensor, end_tensor) of the plan
  size_t tensor_elements = 0;               // sum of those tensors' numel (padding excluded)
  size_t numel() const { return end - begin; }
  bool operator==(const Bucket&) const = default;
};

struct BucketPlanOptions {
  size_t cap_bytes = size_t{25} << 20;              // --bucket-mb
  size_t first_bucket_cap_bytes = size_t{1} << 20;  // --first-bucket-mb
  size_t element_bytes = 4;                         // gradient dtype size
  bool operator==(const BucketPlanOptions&) const = default;

  // The caps of --bucket-mb / --first-bucket-mb (MiB, fractions allowed; the caller has checked them positive),
  // truncated to whole bytes: the one conversion train, tune, predict and torch_ddp cut their buckets by.
  static BucketPlanOptions from_mb(double cap_mb, double first_cap_mb);
};

class BucketPlan {
 public:
  BucketPlan() = default;
  BucketPlan(std::vector<GradTensor> tensors, const BucketPlanOptions& options);

  const std::vector<Bucket>& buckets() const { return buckets_; }
  const std::vector<GradTensor>& tensors() const { return tensors_; }
  const BucketPlanOptions& options() const { return options_; }
  size_t size() const { return buckets_.size(); }
  const Bucket& operator[](size_t index) const { return buckets_[index]; }
  size_t bucket_of_tensor(size_t tensor_index) const { return bucket_of_tensor_[tensor_index]; }

  // One line per bucket: index, elements, MiB, tensor count, first and last tensor names.
  std::string table() const;
  // Caps and every bucket's [begin, end) and tensor range: equal signatures <=> equal plans (for agreement).
  std::string signature() const;
  bool operator==(const BucketPlan&) const = default;

 private:
  std::vector<GradTensor> tensors_;
  BucketPlanOptions options_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_tensor_;
};

}  // namespace ddpx
