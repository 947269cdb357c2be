// Host conversions between float and the two 16-bit float formats (IEEE fp16, bfloat16): the one pair ddpx has, for
// the wire (MPI's 16-bit reductions, CastHook's CPU path) and for files (checkpoints, safetensors).
// Guarantees: float -> 16 bit rounds to nearest even (what CUDA's __float2half_rn / __float2bfloat16_rn and torch's
// .half() / .bfloat16() do, so host and device casts agree bit for bit on every number); overflow becomes infinity;
// NaN stays a quiet NaN of the same sign: fp16's is the canonical 0x7e00 (PyTorch's fp16 conversion drops the
// payload), bf16's keeps the payload's upper bits with the quiet bit set. 16 bit -> float is exact. Pure functions,
// any thread.
#pragma once
#include <cstdint>
#include <cstring>

namespace ddpx {

inline uint32_t float_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

inline float bits_float(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

inline uint16_t float_to_bf16(float value) {
  uint32_t bits = float_bits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);  // quiet NaN
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

inline float bf16_to_float(uint16_t value) { return bits_float(static_cast<uint32_t>(value) << 16); }

inline uint16_t float_to_half(float value) {
  uint32_t bits = float_bits(value);
  uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (magnitude >= 0x38800000u) {                                               // normal half
    uint32_t rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
  }
  if (magnitude < 0x33000000u) return static_cast<uint16_t>(sign);  // below half the smallest subnormal
  // Subnormal half: shift the full mantissa into place, rounding to nearest even.
  uint32_t exponent = magnitude >> 23;
  uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
  uint32_t shift = 126u - exponent;  // 14 .. 24
  uint32_t half_mantissa = mantissa >> shift;
  uint32_t remainder = mantissa & ((1u << shift) - 1u);
  uint32_t halfway = 1u << (shift - 1u);
  if (remainder > halfway || (remainder == halfway && (half_mantissa & 1u))) ++half_mantissa;
  return static_cast<uint16_t>(sign | half_mantissa);
}

inline float half_to_float(uint16_t value) {
  uint32_t sign = static_cast<uint32_t>(value & 0x8000u) << 16;
  uint32_t exponent = (value >> 10) & 0x1fu;
  uint32_t mantissa = value & 0x3ffu;
  if (exponent == 0x1fu) return bits_float(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  if (mantissa == 0) return bits_float(sign);
  // Subnormal: value = mantissa * 2^-24, exact in float.
  float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-08f;
  return sign ? -magnitude : magnitude;
}

}  // namespace ddpx
