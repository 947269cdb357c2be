// byte_size() and si_prefixed(): the unit chosen by magnitude, never "0.0 GB" or "0.0 M" for a small model.
#include <gtest/gtest.h>

#include "core/byte_size.hpp"

namespace ddpx {
namespace {

TEST(ByteSize, TheUnitFollowsTheMagnitude) {
  EXPECT_EQ(byte_size(0), "0 bytes");
  EXPECT_EQ(byte_size(812), "812 bytes");
  EXPECT_EQ(byte_size(999.4), "999 bytes");
  EXPECT_EQ(byte_size(999.6), "1.00 kB");
  EXPECT_EQ(byte_size(4 * 8906), "35.6 kB");        // a tiny MLP's fp32 weights: was "0.0 GB"
  EXPECT_EQ(byte_size(4 * 269322.0), "1.08 MB");     // mlp:... 784-256-256-10
  EXPECT_EQ(byte_size(999999), "1.00 MB");           // rounds up into the next unit, not "1000 kB"
  EXPECT_EQ(byte_size(4 * 306535400.0), "1.23 GB");  // vit_l_32
  EXPECT_EQ(byte_size(2.5e12), "2.50 TB");
}

TEST(ByteSize, CountsTakeThePrefixAlone) {
  EXPECT_EQ(si_prefixed(19626, ""), "19.6 k");  // vit_tiny_test's parameters: was "0.0 M"
  EXPECT_EQ(si_prefixed(4206602, ""), "4.21 M");
  EXPECT_EQ(si_prefixed(306535400, ""), "307 M");
  EXPECT_EQ(si_prefixed(12, ""), "12 ");
}

}  // namespace
}  // namespace ddpx
