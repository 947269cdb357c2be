// PowerSgdHook: low-rank gradient compression with error feedback (Vogels et al. 2019), as PyTorch's
// powerSGD_hook defines it.
// Guarantees, per bucket and synchronized step s:
//  - s < start_step: a plain fp32 all-reduce (avg), no state touched.
//  - otherwise: bucket += E (error feedback, whole bucket); the uncompressed tensors (1-D, or not worth it at
//    min_compression_rate; see powersgd_layout.hpp) are packed and all-reduced (avg) together; for each
//    compressed matrix M [rows, cols]: Q orthogonalized, P = M Q, all-reduce P (avg, one call for the bucket),
//    P orthogonalized, Q = M^T P, all-reduce Q (avg), M <- P Q^T; then E = (bucket before) - (bucket after).
//    Collectives per compressed bucket: at most 3, whatever the number of tensors.
//  - Q starts from powersgd_initial_q(seed, bucket): identical on every rank; with warm_start it carries over
//    from the previous step (PyTorch's default), without it is redrawn every step.
//  - Differences from PyTorch: P is averaged rather than summed before orthogonalization (the same after it);
//    an all-zero column stays zero instead of NaN.
//  - State (E, P, Q) lives per bucket index in the bucket's device memory; a bucket whose span changes is an error.
//  - CUDA: the first compressed step of a bucket allocates and uploads Q (host sync); later steps enqueue only
//    (graph-capturable, with warm_start).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "ddp/comm_hook.hpp"
#include "ddp/powersgd_layout.hpp"
#include "ddp/powersgd_math.hpp"

namespace ddpx {

struct PowerSgdOptions {
  int64_t rank = 1;                    // matrix approximation rank R
  int64_t start_step = 2;              // PyTorch's start_powerSGD_iter (it requires > 1 with error feedback)
  double min_compression_rate = 2.0;
  bool warm_start = true;
  uint64_t seed = 0;
};

class PowerSgdHook : public CommHook {
 public:
  explicit PowerSgdHook(const PowerSgdOptions& options);
  std::string name() const override;
  void run(BucketView& bucket, Communicator& comm, void* stream, int64_t step) override;
  const PowerSgdOptions& options() const { return options_; }

 private:
  struct BucketState {
    size_t begin = 0, end = 0;
    CompressionLayout layout;
    std::unique_ptr<PowerSgdBucketMath> math;
    bool q_initialized = false;
  };
  BucketState& state_for(const BucketView& bucket);

  PowerSgdOptions options_;
  std::vector<std::unique_ptr<BucketState>> states_;  // by bucket index
};

}  // namespace ddpx
