// HostTensor dtype helpers and conversions, and the fp16/bf16 bit conversions (checked against the compiler's
// IEEE _Float16 where it exists, and against hand-worked bit patterns).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "core/half_precision.hpp"
#include "core/rng.hpp"
#include "io/io_test_support.hpp"
#include "io/tensor.hpp"

namespace ddpx {
namespace {

using testing::expect_error;

TEST(HalfFloat, Fp16HandWorkedValues) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(65504.f), 0x7bff);            // largest finite
  EXPECT_EQ(float_to_half(65519.f), 0x7bff);            // below the halfway point 65520
  EXPECT_EQ(float_to_half(65520.f), 0x7c00);            // tie rounds to even: infinity
  EXPECT_EQ(float_to_half(0x1p-24f), 0x0001);           // smallest subnormal
  EXPECT_EQ(float_to_half(0x1p-25f), 0x0000);           // tie between 0 and 2^-24 goes to even 0
  EXPECT_EQ(float_to_half(0x1.8p-25f), 0x0001);         // above the tie
  EXPECT_EQ(float_to_half(0x1.ff8p-15f), 0x03ff);       // largest subnormal
  EXPECT_EQ(float_to_half(1.0f + 0x1p-11f), 0x3c00);    // tie, 0x3c00 is even
  EXPECT_EQ(float_to_half(1.0f + 0x3p-11f), 0x3c02);    // tie, rounds up to even 0x3c02
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::nanf("")))));
  EXPECT_EQ(half_to_float(0x3555), 0x1.554p-2f);  // 0.333251953125
  EXPECT_EQ(half_to_float(0x0001), 0x1p-24f);
  EXPECT_EQ(half_to_float(0xfc00), -std::numeric_limits<float>::infinity());
}

#if defined(__FLT16_MANT_DIG__)
TEST(HalfFloat, Fp16MatchesCompilerFloat16) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const auto h = std::bit_cast<_Float16>(static_cast<uint16_t>(bits));
    const float expected = static_cast<float>(h);
    const float got = half_to_float(static_cast<uint16_t>(bits));
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(got)) << bits;
    } else {
      ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(expected)) << bits;
    }
  }
  // Random float bit patterns over the whole range, weighted toward the fp16 range.
  Rng rng(7);
  for (int i = 0; i < 2'000'000; ++i) {
    uint32_t x = static_cast<uint32_t>(rng.next_u64());
    if (i % 2) x = (x & 0x80ffffffu) | ((96u + static_cast<uint32_t>(rng.below(48))) << 23);  // exponents near fp16
    const float value = std::bit_cast<float>(x);
    if (std::isnan(value)) continue;
    ASSERT_EQ(float_to_half(value), std::bit_cast<uint16_t>(static_cast<_Float16>(value))) << std::hex << x;
  }
}
#endif

TEST(HalfFloat, Bf16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f), 0x3f80);  // tie, even stays
  EXPECT_EQ(float_to_bf16(1.0f + 0x3p-8f), 0x3f82);  // tie, rounds up to even
  EXPECT_EQ(float_to_bf16(1.0f + 0x1.2p-8f), 0x3f81);  // above the tie
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // overflows to inf
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
  EXPECT_EQ(bf16_to_float(0xc0a0), -5.0f);
}

TEST(HostTensor, SizesNamesAndTypedViews) {
  EXPECT_EQ(dtype_size(TensorDType::bf16), 2u);
  EXPECT_EQ(dtype_size(TensorDType::i64), 8u);
  EXPECT_EQ(dtype_name(TensorDType::u8), "u8");
  EXPECT_EQ(shape_numel(std::vector<int64_t>{}), 1u);
  EXPECT_EQ(shape_numel(std::vector<int64_t>{2, 0, 3}), 0u);
  EXPECT_EQ(shape_string(std::vector<int64_t>{2, 3}), "[2, 3]");

  const std::vector<int32_t> values = {1, -2, 3, 4, 5, 6};
  HostTensor t = HostTensor::from_values<int32_t>({2, 3}, values);
  EXPECT_EQ(t.nbytes(), 24u);
  EXPECT_EQ(t.values<int32_t>()[1], -2);
  EXPECT_EQ(t.to_int64(), (std::vector<int64_t>{1, -2, 3, 4, 5, 6}));
  EXPECT_EQ(t.to_float32()[1], -2.f);
  expect_error([&] { (void)t.values<float>(); }, {"[2, 3]", "i32", "f32"});
  expect_error([&] { (void)HostTensor::from_values<int32_t>({4}, values); }, {"[4]", "6 were given"});
  expect_error([] { (void)HostTensor::zeros(TensorDType::f32, {2, -1}); }, {"[2, -1]", "negative"});
  expect_error([] { (void)HostTensor::zeros(TensorDType::f32, {3}).to_int64(); }, {"f32", "integers"});
}

TEST(HostTensor, ConvertsEveryDtypeToFloat32) {
  const std::vector<uint16_t> bf16 = {0x3f80, 0xc0a0};   // 1, -5
  const std::vector<uint16_t> fp16 = {0x3c00, 0xc500};   // 1, -5
  const std::vector<double> f64 = {0.1, -1e40};         // rounds to nearest float, overflows to -inf
  const std::vector<int64_t> i64 = {-7, 1LL << 40};
  const std::vector<uint8_t> u8 = {0, 255};
  std::vector<float> out(2);
  convert_to_float32(TensorDType::bf16, reinterpret_cast<const std::byte*>(bf16.data()), 2, out.data());
  EXPECT_EQ(out, (std::vector<float>{1.f, -5.f}));
  convert_to_float32(TensorDType::f16, reinterpret_cast<const std::byte*>(fp16.data()), 2, out.data());
  EXPECT_EQ(out, (std::vector<float>{1.f, -5.f}));
  convert_to_float32(TensorDType::f64, reinterpret_cast<const std::byte*>(f64.data()), 2, out.data());
  EXPECT_EQ(out[0], 0.1f);
  EXPECT_EQ(out[1], -std::numeric_limits<float>::infinity());
  convert_to_float32(TensorDType::i64, reinterpret_cast<const std::byte*>(i64.data()), 2, out.data());
  EXPECT_EQ(out, (std::vector<float>{-7.f, 0x1p40f}));
  convert_to_float32(TensorDType::u8, reinterpret_cast<const std::byte*>(u8.data()), 2, out.data());
  EXPECT_EQ(out, (std::vector<float>{0.f, 255.f}));
}

}  // namespace
}  // namespace ddpx
