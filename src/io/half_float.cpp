// fp16 / bf16 <-> float by bit manipulation (see half_float.hpp for the rounding guarantees).
#include "io/half_float.hpp"

#include <bit>

namespace ddpx {

float fp16_bits_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));  // inf / NaN
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));  // rebias 15 -> 127
}

uint16_t float_to_fp16_bits(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t magnitude = x & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu);  // NaN, kept quiet
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 (halfway past 65504) rounds to inf
  if (magnitude >= 0x38800000u) {                        // normal fp16 range, >= 2^-14
    const uint32_t rebiased = magnitude - 0x38000000u;   // exponent 127 -> 15 bias
    const uint32_t round_to_even = 0xfffu + ((rebiased >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((rebiased + round_to_even) >> 13));
  }
  if (magnitude <= 0x33000000u) return sign;  // <= 2^-25: rounds to zero (the tie goes to even zero)
  // Subnormal fp16: count units of 2^-24 with the full 24-bit float significand, then round to nearest even.
  const uint32_t exponent = magnitude >> 23;  // 102 .. 112 here
  const uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - exponent;  // 14 .. 24
  uint32_t units = significand >> shift;
  const uint32_t remainder = significand & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  if (remainder > half || (remainder == half && (units & 1u))) ++units;  // may carry into the smallest normal
  return static_cast<uint16_t>(sign | units);
}

float bf16_bits_to_float(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

uint16_t float_to_bf16_bits(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN, kept quiet
  const uint32_t round_to_even = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + round_to_even) >> 16);
}

}  // namespace ddpx
