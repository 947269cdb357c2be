// core/fnv1a.hpp: the published FNV-1a 64-bit test vectors, and continuing a hash over concatenated input.
#include "core/fnv1a.hpp"

#include <gtest/gtest.h>

#include <string>

namespace ddpx {
namespace {

TEST(Fnv1a, MatchesThePublishedVectors) {
  EXPECT_EQ(fnv1a(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a("foobar"), 0x85944171f73967e8ULL);
}

TEST(Fnv1a, ContinuesOverConcatenatedInput) {
  const std::string text = "blocks.3.mlp.0.weight";
  const uint64_t first = fnv1a(std::string_view(text).substr(0, 7));
  EXPECT_EQ(fnv1a(std::string_view(text).substr(7), first), fnv1a(text));
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  EXPECT_EQ(fnv1a(bytes, text.size()), fnv1a(text));
}

}  // namespace
}  // namespace ddpx
