// WireGradients: a bucket's averaged gradients left where the hook computed them instead of written into the
// bucket: a 16-bit wire buffer (Note [Widening fused into the update]) or a PowerSGD bucket's factors (Note
// [Low-rank gradients fused into the update]), both in ddp/comm_hook.hpp.
// Guarantees:
//  - data != nullptr: `data[i]` for i in [0, bucket numel) is the bucket's element i as the hook's run() would have
//    widened it into the bucket (the widening is exact, so a consumer that widens in registers computes the same
//    bits); the pointer is 8-byte aligned.
//  - low_rank.pieces != nullptr: the pieces cover the bucket (core/low_rank.hpp); a factor piece's elements are
//    the values run() would have written (the consumer evaluates them with low_rank_product, as the hook does),
//    a plain piece's are in the bucket, averaged.
//  - neither: the average is in the bucket after all (the hook's run_leaving_wire did run()'s work).
//  - Valid on the hook's stream until the hook's next call for the bucket; a 16-bit wire (data) only until the
//    hook's next call for any bucket (the cast hook reuses one buffer), which is why the CUDA engine reads it on
//    the hook's stream (Note [Reduced spans updated beside the hook], train/cuda_engine.cpp).
#pragma once
#include <cstdint>

#include "core/low_rank.hpp"
#include "ddp/wire_format.hpp"

namespace ddpx {

struct WireGradients {
  const uint16_t* data = nullptr;
  WireFormat format = WireFormat::bf16;
  LowRankGradients low_rank;

  bool in_bucket() const { return data == nullptr && low_rank.pieces == nullptr; }  // the "neither" case above
  // A 16-bit wire: the hook's one buffer, overwritten by its next bucket (read it on the hook's stream).
  bool reused_by_next_bucket() const { return data != nullptr; }
};

}  // namespace ddpx
