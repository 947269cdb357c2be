// CommHook: what happens to one bucket of gradients between "final on this rank" and "averaged over all ranks".
// Guarantees every hook keeps:
//  - run() leaves the AVERAGE over ranks (or a documented approximation of it) in the bucket, in place.
//  - run() is called for every bucket of a synchronized step in bucket order, with the same spans every step;
//    on CPU from the reducer's communication thread, on CUDA from the caller's thread with `stream` the
//    communication stream: all device work is enqueued there and nothing waits on the host, except the first
//    call for a bucket, which may allocate (so capture CUDA graphs after one eager step).
//  - `step` counts synchronized steps from 0 (hooks that change behaviour over time key on it).
// The hooks themselves and their factory are in ddp/comm_hook_factory.hpp, what each one is (the --comm-hook
// spec, lossy or not, whether it reads its buckets, its wire messages) in comm_plan/hook_catalogue.hpp: this
// interface imports no implementation.
#pragma once
#include <cstdint>
#include <limits>
#include <string>

#include "core/internal_assert.hpp"
#include "ddp/bucket_view.hpp"
#include "core/reduced_gradients.hpp"
#include "dist/communicator.hpp"

namespace ddpx {

class CommHook {
 public:
  virtual ~CommHook() = default;
  virtual std::string name() const = 0;
  virtual void run(BucketView& bucket, Communicator& comm, void* stream, int64_t step) = 0;
  // The first synchronized step from which run() enqueues the same device work every step, allocating and
  // synchronizing nothing: a step from here on may be captured into a CUDA graph and replayed for all later ones.
  // kNeverCapturable: never (the work changes every step).
  static constexpr int64_t kNeverCapturable = std::numeric_limits<int64_t>::max();
  virtual int64_t capturable_from_step() const { return 1; }
  // The bytes run() hands to its collectives for this bucket at this step, summed over them: what the bucket's
  // bus bandwidth is computed from (run reports, traces). Default: the fp32 span.
  virtual size_t wire_bytes(const BucketView& bucket, int64_t /*step*/) const {
    return bucket.numel() * sizeof(float);
  }
  // Called once per synchronized step, after the run of its last bucket: CUDA, with the communication stream,
  // enqueued after that run (a hook joins here any stream it forked, so a captured step contains its whole
  // work); CPU, with nullptr, once the communication thread has finished every bucket. Default: nothing.
  virtual void finish_step(void* /*stream*/) {}

  // Note [Widening fused into the update]
  // A 16-bit cast hook ends by widening its reduced wire buffer back into the fp32 bucket (read 2 bytes, write 4
  // per gradient), and the optimizer that runs right after it on the same stream reads those 4 bytes again. When
  // a consumer reads the gradients straight from the wire buffer instead, the widening pass and half of the
  // optimizer's gradient reads disappear: at world 1 on one H200 the bf16 hook then costs its narrowing pass
  // alone. Rules:
  //  - leaves_result_on_wire(bucket): whether run_leaving_wire() is available for this bucket (CUDA buckets of
  //    the cast hooks). The launcher asks only when a consumer is attached and on for the step (the trainer's
  //    optimizer overlapped with the reduction, Note [Optimizer overlapped with backward]).
  //  - run_leaving_wire() does run()'s work except the widening: the bucket keeps this rank's own, unreduced
  //    gradients, and the returned ReducedGradients (core/reduced_gradients.hpp) hold the average. The consumer must use
  //    them on `stream` before the hook's next call (it reuses the buffer).
  //  - Nothing else may read the bucket's fp32 values as averaged after such a step: the engines' numerics check
  //    runs inside the update that reads the wire, and calibration steps, --optimizer-overlap off and
  //    accumulation micro-batches take run(), which widens.
  //
  // Note [Low-rank gradients fused into the update]
  // PowerSGD's average of a compressed matrix is P Q^T: its finish writes it into the bucket (4 bytes per
  // gradient) only for the optimizer to read it back. With a consumer it can leave it in the factors instead:
  // run_leaving_wire() writes the averaged vectors into the bucket and E = M - P Q^T as run() does, skips the
  // matrices' P Q^T writes, and returns ReducedGradients whose low_rank pieces describe the bucket; the optimizer
  // evaluates each gradient from its P row and Q row (a few floats, from L1/L2) with core/low_rank.hpp's
  // low_rank_product, the function finish uses, so the update equals run() + the plain update bit for bit. Two of
  // the hook's eight passes over the bucket disappear, and the error update's two more move into the next step's
  // first pass (Note [Error feedback deferred to the next begin], ddp/powersgd_math_cuda.cu). The rules above
  // hold; in addition a step before PowerSGD's start, or a bucket whose math cannot (can_leave_factors()), returns
  // empty ReducedGradients: the average is then in the bucket, as after run().
  virtual bool leaves_result_on_wire(const BucketView& /*bucket*/) const { return false; }
  virtual ReducedGradients run_leaving_wire(BucketView& bucket, Communicator& /*comm*/, void* /*stream*/,
                                         int64_t /*step*/) {
    DDPX_INTERNAL_FAIL("hook '{}' cannot leave bucket {}'s result on the wire (leaves_result_on_wire is false)",
                       name(), bucket.index);
  }
};

}  // namespace ddpx
