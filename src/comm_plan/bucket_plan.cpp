// BucketPlan: greedy packing of backward-ordered tensors under PyTorch DDP's caps.
#include "comm_plan/bucket_plan.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace ddpx {
namespace {

void validate(const std::vector<GradTensor>& tensors, const BucketPlanOptions& options) {
  DDPX_REQUIRE(!tensors.empty(), "bucket plan: the gradient tensor list is empty (nothing to communicate)");
  DDPX_REQUIRE(options.element_bytes > 0, "bucket plan: element size must be positive");
  DDPX_REQUIRE(options.cap_bytes > 0, "--bucket-mb must be positive");
  DDPX_REQUIRE(options.first_bucket_cap_bytes > 0, "--first-bucket-mb must be positive");
  size_t previous_end = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const GradTensor& t = tensors[i];
    DDPX_REQUIRE(t.numel > 0, "bucket plan: gradient tensor '{}' has no elements; leave it out of the list",
                 t.name);
    if (!t.shape.empty()) {
      int64_t product = 1;
      for (int64_t extent : t.shape) product *= extent;
      DDPX_REQUIRE(product == static_cast<int64_t>(t.numel),
                   "bucket plan: gradient tensor '{}' has numel {} but its shape holds {} elements", t.name,
                   t.numel, product);
    }
    DDPX_REQUIRE(i == 0 || t.offset >= previous_end,
                 "bucket plan: gradient tensor '{}' starts at element {} inside the previous tensor '{}' (which "
                 "ends at {}); tensors must be listed in buffer order without overlap",
                 t.name, t.offset, tensors[i - 1].name, previous_end);
    previous_end = t.offset + t.numel;
  }
}

}  // namespace

BucketPlanOptions BucketPlanOptions::from_mb(double cap_mb, double first_cap_mb) {
  BucketPlanOptions options;
  options.cap_bytes = static_cast<size_t>(cap_mb * 1024 * 1024);
  options.first_bucket_cap_bytes = static_cast<size_t>(first_cap_mb * 1024 * 1024);
  return options;
}

BucketPlan::BucketPlan(std::vector<GradTensor> tensors, const BucketPlanOptions& options)
    : tensors_(std::move(tensors)), options_(options) {
  validate(tensors_, options_);
  bucket_of_tensor_.resize(tensors_.size());
  Bucket open;
  bool open_has_tensors = false;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const size_t bytes = tensors_[i].numel * options_.element_bytes;
    const size_t cap = buckets_.empty() ? options_.first_bucket_cap_bytes : options_.cap_bytes;
    if (open_has_tensors && open.tensor_elements * options_.element_bytes + bytes > cap) {
      open.end_tensor = i;
      buckets_.push_back(open);
      open = Bucket{};
      open_has_tensors = false;
    }
    if (!open_has_tensors) {
      open.first_tensor = i;
      open.begin = tensors_[i].offset;
      open_has_tensors = true;
    }
    open.tensor_elements += tensors_[i].numel;
    bucket_of_tensor_[i] = buckets_.size();
  }
  open.end_tensor = tensors_.size();
  buckets_.push_back(open);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    const GradTensor& last = tensors_[buckets_[b].end_tensor - 1];
    buckets_[b].end = b + 1 < buckets_.size() ? buckets_[b + 1].begin : last.offset + last.numel;
  }
}

std::string BucketPlan::table() const {
  std::string out = fmt::format("{:>6} {:>12} {:>10} {:>8}  {}\n", "bucket", "elements", "MiB", "tensors",
                                "first .. last tensor");
  for (size_t b = 0; b < buckets_.size(); ++b) {
    const Bucket& bucket = buckets_[b];
    out += fmt::format("{:>6} {:>12} {:>10.3f} {:>8}  {} .. {}\n", b, bucket.numel(),
                       static_cast<double>(bucket.numel() * options_.element_bytes) / (1 << 20),
                       bucket.end_tensor - bucket.first_tensor, tensors_[bucket.first_tensor].name,
                       tensors_[bucket.end_tensor - 1].name);
  }
  return out;
}

std::string BucketPlan::signature() const {
  std::string out = fmt::format("cap={} first={} elem={} buckets={}:", options_.cap_bytes,
                                options_.first_bucket_cap_bytes, options_.element_bytes, buckets_.size());
  for (const Bucket& bucket : buckets_)
    out += fmt::format(" [{},{})t{}-{}", bucket.begin, bucket.end, bucket.first_tensor, bucket.end_tensor);
  return out;
}

}  // namespace ddpx
