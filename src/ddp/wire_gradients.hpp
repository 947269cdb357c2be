// WireGradients: a bucket's averaged gradients left in a hook's 16-bit wire buffer instead of widened back into
// the bucket (Note [Widening fused into the update], ddp/comm_hook.hpp).
// Guarantees: `data[i]` for i in [0, bucket numel) is the bucket's element i as the hook's run() would have
// widened it into the bucket (the widening is exact, so a consumer that widens in registers computes the same
// bits); it is valid on the hook's stream until the hook's next call; the pointer is 8-byte aligned.
#pragma once
#include <cstdint>

#include "ddp/wire_format.hpp"

namespace ddpx {

struct WireGradients {
  const uint16_t* data = nullptr;
  WireFormat format = WireFormat::bf16;
};

}  // namespace ddpx
