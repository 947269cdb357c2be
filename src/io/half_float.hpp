// Bit-level conversions between float and the two 16-bit float formats found in checkpoints (IEEE fp16, bf16).
// Guarantees: float -> 16-bit rounds to nearest, ties to even (what torch's .half() / .bfloat16() do); overflow
// becomes +-inf, NaN stays NaN (quiet). 16-bit -> float is exact. Pure functions, safe on any thread.
#pragma once
#include <cstdint>

namespace ddpx {

float fp16_bits_to_float(uint16_t bits);
uint16_t float_to_fp16_bits(float value);
float bf16_bits_to_float(uint16_t bits);
uint16_t float_to_bf16_bits(float value);

}  // namespace ddpx
