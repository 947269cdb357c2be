// Fused cast kernels of CastHook (CUDA builds only): one pass each way, enqueued on `stream`, no host sync.
// C++17 (compiled by nvcc). Rounding: __float2half_rn / __float2bfloat16_rn (nearest even), the same as the CPU versions in cast_hook.hpp.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/reduced_gradients.hpp"

namespace ddpx {

void launch_scale_to_wire_format(const float* in, uint16_t* out, size_t count, float scale, WireFormat format,
                                 void* stream);
void launch_widen_from_wire_format(const uint16_t* in, float* out, size_t count, WireFormat format, void* stream);

}  // namespace ddpx
