// PowerSgdHook: low-rank gradient compression with error feedback (Vogels et al. 2019), as PyTorch's
// powerSGD_hook defines it.
// Guarantees, per bucket and synchronized step s:
//  - s < start_step: a plain fp32 all-reduce (avg), no state touched.
//  - otherwise: M = bucket + E (error feedback, whole bucket); for each compressed matrix M_i [rows, cols]:
//    Q_i orthogonalized, P_i = M_i Q_i; the uncompressed tensors of M (1-D, or not worth it at
//    min_compression_rate; see powersgd_layout.hpp) packed and all-reduced (avg) together with every P_i in one
//    call; P_i orthogonalized, Q_i = M_i^T P_i, all-reduce of every Q_i (avg, one call); the bucket gets the
//    averaged vectors and P_i Q_i^T; E = M - bucket. Collectives per bucket: at most 2, whatever its tensors.
//  - Q starts from powersgd_initial_q(seed, bucket): identical on every rank; with warm_start it carries over
//    from the previous step (PyTorch's default), without it is redrawn every step.
//  - Differences from PyTorch: P is averaged rather than summed before orthogonalization (the same after it);
//    an all-zero column stays zero instead of NaN.
//  - State (E, P, Q) lives per bucket index in the bucket's device memory; a bucket whose span changes is an error.
//  - CUDA: the first compressed step of a bucket allocates and uploads Q (host sync); later steps enqueue a fixed
//    number of kernels per bucket (whatever its tensors) and never allocate or synchronize (graph-capturable, with
//    warm_start); with warm_start Q's orthogonalization for the next step runs on a side stream, joined in
//    finish_step() (Note [Q's orthogonalization beside the hook's chain], powersgd_hook.cpp). Device memory: E (one
//    fp32 copy of the gradients), P, Q and its orthogonalized copy, packed vectors, small task tables, and one
//    scratch shared by all buckets (the partial sums of M^T P, about bucket elements * R / 32 floats).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "comm_plan/powersgd_layout.hpp"
#include "ddp/comm_hook.hpp"
#include "ddp/device_scratch.hpp"
#include "ddp/powersgd_math.hpp"
#include "ddp/side_stream.hpp"

namespace ddpx {

struct PowerSgdOptions {
  int64_t rank = 1;                    // matrix approximation rank R
  int64_t start_step = 2;              // PyTorch's start_powerSGD_iter (it requires > 1 with error feedback)
  double min_compression_rate = 2.0;
  bool warm_start = true;
  uint64_t seed = 0;
};

// The layout of a hook's bucket (comm_plan/powersgd_layout.hpp over the view's tensors and span).
CompressionLayout plan_compression(const BucketView& bucket, int64_t rank, double min_compression_rate);

class PowerSgdHook : public CommHook {
 public:
  explicit PowerSgdHook(const PowerSgdOptions& options);
  std::string name() const override;
  void run(BucketView& bucket, Communicator& comm, void* stream, int64_t step) override;
  // The step after the first compressed one (which allocates and uploads Q); never without warm_start (Q is
  // redrawn, with a host upload, every step).
  int64_t capturable_from_step() const override;
  // Before start_step the fp32 bucket; then the packed vectors with every P_i (one call) plus every Q_i (another).
  size_t wire_bytes(const BucketView& bucket, int64_t step) const override;
  // Note [Low-rank gradients fused into the update] (ddp/comm_hook.hpp): CUDA buckets.
  bool leaves_result_on_wire(const BucketView& bucket) const override;
  ReducedGradients run_leaving_wire(BucketView& bucket, Communicator& comm, void* stream, int64_t step) override;
  // Joins the side stream of Note [Q's orthogonalization beside the hook's chain] (powersgd_hook.cpp).
  void finish_step(void* stream) override;
  const PowerSgdOptions& options() const { return options_; }

  // {R, START} (comm_plan/hook_catalogue.hpp parsed them) -> the hook; ddp/comm_hook_factory.cpp's case.
  static std::unique_ptr<CommHook> make(const std::vector<int64_t>& args);

 private:
  struct BucketState {
    size_t begin = 0, end = 0;
    CompressionLayout layout;
    std::unique_ptr<PowerSgdBucketMath> math;
    bool q_initialized = false;
  };
  BucketState& state_for(const BucketView& bucket);
  // run()'s sequence; leave_factors: end leaving the factors where the bucket's math can, returning its
  // low-rank gradients (else empty ReducedGradients: the average is in the bucket).
  ReducedGradients run_steps(BucketView& bucket, Communicator& comm, void* stream, int64_t step, bool leave_factors);

  PowerSgdOptions options_;
  DeviceScratch scratch_;  // shared by the buckets' CUDA math (they run in order on one stream)
  SideStream side_;        // Note [Q's orthogonalization beside the hook's chain]
  int64_t side_step_ = -1;  // the step and bucket of the last fork
  size_t side_bucket_ = 0;
  std::vector<std::unique_ptr<BucketState>> states_;  // by bucket index; destroyed before scratch_
};

}  // namespace ddpx
