// kernels/transpose: exact against a CPU loop on fresh random data, for shapes that are not multiples of the
// 32 x 32 tile, leading dimensions wider than the matrix (the untouched gaps keep their values) and a
// ViT-L/32-sized operand; bad shapes get an error naming the sizes.
#include <gtest/gtest.h>

#include "error_expect.hpp"
#include "gpu_guard.hpp"
#include "kernel_test_utils.hpp"
#include "kernels/transpose.hpp"

namespace ddpx {
namespace {

void expect_exact_transpose(int64_t rows, int64_t cols, int64_t ld_in, int64_t ld_out, uint64_t seed) {
  const auto in = testing::random_vector(static_cast<size_t>(rows * ld_in), seed);
  const std::vector<float> fill(static_cast<size_t>(cols * ld_out), -7.f);
  auto d_in = testing::to_device<float>(in), d_out = testing::to_device<float>(fill);
  transpose(d_in.get(), rows, cols, ld_in, d_out.get(), ld_out, nullptr);
  const auto out = testing::to_host(d_out);
  int64_t wrong = 0;
  for (int64_t c = 0; c < cols; ++c)
    for (int64_t r = 0; r < ld_out; ++r) {
      const float want = r < rows ? in[r * ld_in + c] : -7.f;
      wrong += out[c * ld_out + r] != want;
    }
  EXPECT_EQ(wrong, 0) << rows << " x " << cols << ", ld " << ld_in << " -> " << ld_out;
}

TEST(Transpose, EqualsTheCpuLoopBitForBit) {
  DDPX_REQUIRE_GPU();
  expect_exact_transpose(1, 1, 1, 1, 1);
  expect_exact_transpose(33, 65, 65, 33, 2);
  expect_exact_transpose(130, 70, 75, 131, 5);
  expect_exact_transpose(50, 7, 12, 61, 3);
  expect_exact_transpose(1600, 1024, 1024, 1600, 4);
}

TEST(Transpose, RefusesLeadingDimensionsNarrowerThanTheMatrix) {
  DDPX_REQUIRE_GPU();
  testing::expect_error([] { transpose(nullptr, 4, 8, 6, nullptr, 4, nullptr); }, {"transpose", "4 x 8", "6"});
  testing::expect_error([] { transpose(nullptr, 4, 8, 8, nullptr, 3, nullptr); }, {"transpose", "3"});
}

}  // namespace
}  // namespace ddpx
