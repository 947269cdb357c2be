// core/byte_range.hpp: ranges read from files are checked without forming a sum that can wrap.
#include <gtest/gtest.h>

#include <limits>

#include "core/byte_range.hpp"

namespace ddpx {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

TEST(ByteRange, RangesThatWouldWrapTheSumAreOutside) {
  EXPECT_TRUE(range_fits(0, 10, 10));
  EXPECT_TRUE(range_fits(10, 0, 10));
  EXPECT_FALSE(range_fits(11, 0, 10));
  EXPECT_FALSE(range_fits(3, 8, 10));
  // issue 48's crafted pack entry: offset 2^64 - 8 of 24 bytes wraps offset + size to 16.
  EXPECT_FALSE(range_fits(kMax - 7, 24, 1000));
  EXPECT_FALSE(range_fits(16, kMax - 7, 1000));
  EXPECT_FALSE(range_fits(kMax, kMax, kMax - 1));
  EXPECT_TRUE(range_fits(kMax, 0, kMax));
  EXPECT_TRUE(range_between(16, 4, 16, 20));
  EXPECT_FALSE(range_between(15, 4, 16, 20));
  EXPECT_FALSE(range_between(kMax - 15, 32, 16, 4096));
}

TEST(ByteRange, CheckedArithmeticReportsWrapping) {
  EXPECT_EQ(checked_mul(1u << 20, 1u << 20), uint64_t{1} << 40);
  EXPECT_FALSE(checked_mul(uint64_t{1} << 32, uint64_t{1} << 32));
  EXPECT_EQ(checked_add(kMax - 1, 1), kMax);
  EXPECT_FALSE(checked_add(kMax, 1));
}

}  // namespace
}  // namespace ddpx
