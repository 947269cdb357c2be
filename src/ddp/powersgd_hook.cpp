// PowerSgdHook: the sequence of PowerSGD steps around three collectives; the math is PowerSgdBucketMath's.
//
// Note [Q's orthogonalization beside the hook's chain]
// A bucket's work on the communication stream is one chain: orthogonalize Q, begin, all-reduce P, orthogonalize
// P, Q = M^T P, all-reduce Q, finish. With the backward pass producing buckets faster than the chain consumes
// them, every microsecond of it is paid at the end of the step, and each Gram-Schmidt is a one-block kernel of
// 6-10 us on an H200 (two per bucket, 73 buckets a ViT-L/32 step at rank 4). Q's depends on nothing in the next
// step: with warm start it orthogonalizes this step's averaged Q for the next begin. So once the Q all-reduce is
// enqueued, the hook forks a side stream (ddp/side_stream.hpp) and orthogonalizes Q there, beside finish and the
// next buckets (orthogonalize_q_ahead); finish_step() joins the side stream into the communication stream once
// per step, so a captured step holds the whole of it and the next step's begin comes after it. A caller that
// runs buckets without finish_step() (the hook's own tests) still gets the order: a run that finds side work of
// an earlier step, or of its own or a later bucket, unjoined joins it first. The numbers are unchanged: the same
// kernel on the same Q, one step earlier (Q is orthogonalized into its own buffer, Note [Error feedback deferred
// to the next begin], ddp/powersgd_math_cuda.cu). Without warm start Q is redrawn at every step, and
// orthogonalized there. Measured on an H200 (ViT-L/32 bf16, powersgd:4): exposed communication 0.7-0.9 -> 0.2 ms,
// the DDP cost 2.9 -> 2.5-2.75 ms (docs/results.md, 2026-12-02 morning).
#include "ddp/powersgd_hook.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "ddp/bucket_view.hpp"

namespace ddpx {

CompressionLayout plan_compression(const BucketView& bucket, int64_t rank, double min_compression_rate) {
  return plan_compression(bucket.tensors.data(), bucket.tensors.size(), bucket.begin, bucket.numel(), rank,
                          min_compression_rate);
}

PowerSgdHook::PowerSgdHook(const PowerSgdOptions& options) : options_(options) {
  DDPX_REQUIRE(options.rank >= 1, "--comm-hook powersgd:R needs a rank R >= 1, got {}", options.rank);
  DDPX_REQUIRE(options.start_step >= 0, "--comm-hook powersgd: the start step must be >= 0, got {}",
               options.start_step);
  DDPX_REQUIRE(options.min_compression_rate >= 1.0, "PowerSGD min_compression_rate must be >= 1, got {}",
               options.min_compression_rate);
}

std::string PowerSgdHook::name() const { return fmt::format("powersgd:{}:{}", options_.rank, options_.start_step); }

PowerSgdHook::BucketState& PowerSgdHook::state_for(const BucketView& bucket) {
  if (states_.size() <= bucket.index) states_.resize(bucket.index + 1);
  std::unique_ptr<BucketState>& state = states_[bucket.index];
  if (!state) {
    state = std::make_unique<BucketState>();
    state->begin = bucket.begin;
    state->end = bucket.end;
    state->layout = plan_compression(bucket, options_.rank, options_.min_compression_rate);
    state->math = make_powersgd_math(state->layout, bucket.device, scratch_);
  }
  DDPX_REQUIRE(state->begin == bucket.begin && state->end == bucket.end,
               "PowerSGD: bucket {} changed from elements [{}, {}) to [{}, {}); the hook keeps error feedback per "
               "bucket and needs the same bucket plan every step", bucket.index, state->begin, state->end,
               bucket.begin, bucket.end);
  return *state;
}

size_t PowerSgdHook::wire_bytes(const BucketView& bucket, int64_t step) const {
  if (step < options_.start_step) return bucket.numel() * sizeof(float);
  auto bytes = [](const CompressionLayout& layout) {
    return (layout.uncompressed_elements + layout.p_elements + layout.q_elements) * sizeof(float);
  };
  // Asked at every launch: the bucket's own plan once run() made it (no copy), planned here only before that.
  if (bucket.index < states_.size() && states_[bucket.index]) return bytes(states_[bucket.index]->layout);
  return bytes(plan_compression(bucket, options_.rank, options_.min_compression_rate));
}

std::unique_ptr<CommHook> PowerSgdHook::make(const std::vector<int64_t>& args) {
  DDPX_INTERNAL_ASSERT(args.size() == 2, "PowerSGD is built from {{R, START}}, got {} arguments", args.size());
  PowerSgdOptions options;
  options.rank = args[0];
  options.start_step = args[1];
  return std::make_unique<PowerSgdHook>(options);
}

int64_t PowerSgdHook::capturable_from_step() const {
  return options_.warm_start ? options_.start_step + 1 : kNeverCapturable;
}

void PowerSgdHook::run(BucketView& bucket, Communicator& comm, void* stream, int64_t step) {
  run_steps(bucket, comm, stream, step, false);
}

bool PowerSgdHook::leaves_result_on_wire(const BucketView& bucket) const { return bucket.device == GradDevice::cuda; }

ReducedGradients PowerSgdHook::run_leaving_wire(BucketView& bucket, Communicator& comm, void* stream, int64_t step) {
  DDPX_INTERNAL_ASSERT(bucket.device == GradDevice::cuda, "PowerSgdHook::run_leaving_wire on a host bucket ({})",
                       bucket.index);
  return run_steps(bucket, comm, stream, step, true);
}

void PowerSgdHook::finish_step(void* stream) {
  if (stream) side_.join(stream);
}

ReducedGradients PowerSgdHook::run_steps(BucketView& bucket, Communicator& comm, void* stream, int64_t step,
                                      bool leave_factors) {
  // No finish_step() since that fork: this bucket's Q (or all, in a later step) may still be on the side stream.
  if (side_.pending() && (step != side_step_ || bucket.index <= side_bucket_)) side_.join(stream);
  if (step < options_.start_step) {
    comm.all_reduce(bucket.data, bucket.numel(), CommDType::f32, ReduceOp::avg, stream);
    return {};
  }
  BucketState& state = state_for(bucket);
  PowerSgdBucketMath& math = *state.math;
  const CompressionLayout& layout = state.layout;

  const bool compressed = !layout.matrices.empty();
  if (compressed) {
    if (!state.q_initialized || !options_.warm_start) {
      math.set_q(powersgd_initial_q(layout, options_.seed, bucket.index, options_.warm_start ? 0 : step), stream);
      state.q_initialized = true;
    }
    math.orthogonalize_q(stream);
  }
  math.begin(bucket.data, stream);
  if (layout.uncompressed_elements + layout.p_elements > 0)
    comm.all_reduce(math.packed_and_p(), layout.uncompressed_elements + layout.p_elements, CommDType::f32,
                    ReduceOp::avg, stream);
  const bool leaving = leave_factors && math.can_leave_factors();  // can_leave_factors: a compressed bucket
  if (compressed) {
    math.orthogonalize_p(stream);
    if (leaving)
      math.compute_q_leaving_factors(bucket.data, stream);  // the step's end for the vectors too
    else
      math.compute_q(bucket.data, stream);
    comm.all_reduce(math.q(), layout.q_elements, CommDType::f32, ReduceOp::avg, stream);
    if (options_.warm_start && math.can_orthogonalize_q_ahead()) {
      math.orthogonalize_q_ahead(side_.fork(stream));
      side_step_ = step;
      side_bucket_ = bucket.index;
    }
  }
  if (leaving) {
    ReducedGradients wire;
    wire.low_rank = math.low_rank_gradients();
    return wire;
  }
  math.finish(bucket.data, stream);
  return {};
}

}  // namespace ddpx
