// Host fp16/bf16 conversions: exact values, rounding to nearest even, specials (these define what MPI's 16-bit
// reductions and CastHook's CPU path compute, and must match CUDA's __float2half_rn / __float2bfloat16_rn).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/half_precision.hpp"

namespace ddpx {
namespace {

TEST(HalfPrecision, ExactValuesRoundTrip) {
  for (float v : {0.0f, 1.0f, -2.0f, 0.5f, 65504.0f, -0.25f, 6.103515625e-05f /* 2^-14 */,
                  5.9604644775390625e-08f /* smallest subnormal */})
    EXPECT_EQ(half_to_float(float_to_half(v)), v) << v;
  for (float v : {0.0f, 1.0f, -2.0f, 1.5f, 256.0f})
    EXPECT_EQ(bf16_to_float(float_to_bf16(v)), v) << v;
}

TEST(HalfPrecision, KnownEncodings) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);  // halfway past the max rounds to infinity
  EXPECT_EQ(float_to_half(1e-8f), 0x0000);      // below half the smallest subnormal
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(-1.0f), 0xbf80);
}

TEST(HalfPrecision, RoundsToNearestEven) {
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10 in fp16: ties go to the even mantissa (1).
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3 * 2^-11 lies halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even): rounds up.
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  // bf16 keeps 7 mantissa bits: 1 + 2^-8 is a tie -> 1; 1 + 3 * 2^-8 -> 1 + 2^-6.
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  // Subnormal fp16: 3 * 2^-25 is halfway between 1 and 2 units of 2^-24 -> 2 (even).
  EXPECT_EQ(float_to_half(3 * std::ldexp(1.0f, -25)), 0x0002);
}

TEST(HalfPrecision, RelativeErrorWithinHalfAnUlp) {
  for (int i = 1; i < 2000; ++i) {
    float v = std::sin(float(i)) * float(i);
    EXPECT_LE(std::fabs(half_to_float(float_to_half(v)) - v), std::fabs(v) * std::ldexp(1.0f, -11)) << v;
    EXPECT_LE(std::fabs(bf16_to_float(float_to_bf16(v)) - v), std::fabs(v) * std::ldexp(1.0f, -8)) << v;
  }
}

TEST(HalfPrecision, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::nanf("")))));
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
  EXPECT_EQ(half_to_float(float_to_half(inf)), inf);
  EXPECT_EQ(bf16_to_float(float_to_bf16(-inf)), -inf);
  EXPECT_EQ(half_to_float(float_to_half(1e6f)), inf);
}

// One NaN rule for the wire and for files (the io copy kept fp16 payloads; see half_precision.hpp): fp16's NaN is
// the canonical quiet one of its sign, bf16's keeps the payload's upper bits and is made quiet.
TEST(HalfPrecision, NaNPayloadsFollowOneRule) {
  for (uint32_t bits : {0x7fc00000u, 0x7f800001u, 0x7fc12345u, 0x7fffffffu}) {
    EXPECT_EQ(float_to_half(bits_float(bits)), 0x7e00u) << std::hex << bits;
    EXPECT_EQ(float_to_half(bits_float(bits | 0x80000000u)), 0xfe00u) << std::hex << bits;
    EXPECT_EQ(float_to_bf16(bits_float(bits)), static_cast<uint16_t>((bits >> 16) | 0x40u)) << std::hex << bits;
    EXPECT_TRUE(std::isnan(half_to_float(float_to_half(bits_float(bits)))));
    EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(bits_float(bits)))));
  }
}

}  // namespace
}  // namespace ddpx
