// cuBLASLt wrapper against a double-precision CPU loop: every transpose combination, bias, residual input (c),
// in-place accumulation (beta = 1), fp32 / tf32 / bf16 modes, fp32 and bf16 outputs.
// Tolerances (norm-wise relative): fp32 1e-5; tf32 2e-3 (10-bit mantissa inputs); bf16 operands with fp32
// output 1e-5 against a reference on the same bf16-rounded inputs (only accumulation order differs); bf16 output
// 8e-3 (one bf16 rounding of the result, 2^-9 relative).
#include <gtest/gtest.h>

#include "gpu_guard.hpp"
#include "kernel_test_utils.hpp"
#include "kernels/matmul.hpp"

namespace ddpx {
namespace {

using testing::random_vector;
using testing::relative_error;

struct Case {
  int64_t m, n, k;
  bool trans_a, trans_b, bias, residual, accumulate;
};

// want[m,n] = alpha * op(a) op(b) + beta * c + bias, in double.
std::vector<double> reference(const Case& c, const std::vector<float>& a, const std::vector<float>& b,
                              const std::vector<float>& bias, const std::vector<float>& base, float beta) {
  std::vector<double> out(static_cast<size_t>(c.m * c.n));
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        const double av = c.trans_a ? a[p * c.m + i] : a[i * c.k + p];
        const double bv = c.trans_b ? b[j * c.k + p] : b[p * c.n + j];
        acc += av * bv;
      }
      if (c.bias) acc += bias[j];
      acc += beta * base[i * c.n + j];
      out[i * c.n + j] = acc;
    }
  return out;
}

template <typename T>
double run_case(MatmulMode mode, const Case& c, bool out_fp32, uint64_t seed) {
  auto a = random_vector(c.m * c.k, seed), b = random_vector(c.k * c.n, seed + 1);
  auto bias = random_vector(c.n, seed + 2), base = random_vector(c.m * c.n, seed + 3);
  const bool low = mode == MatmulMode::bf16;
  if (low) a = testing::rounded_bf16(a), b = testing::rounded_bf16(b);
  const bool out_low = low && !out_fp32;
  if (out_low) bias = testing::rounded_bf16(bias), base = testing::rounded_bf16(base);
  auto da = testing::to_device<T>(a), db = testing::to_device<T>(b);
  DeviceBuffer<float> out32;
  DeviceBuffer<T> out_t;
  DeviceBuffer<float> bias32, base32;
  DeviceBuffer<T> bias_t, base_t;
  MatmulCall call;
  call.m = c.m, call.n = c.n, call.k = c.k;
  call.a = {da.get(), c.trans_a ? c.m : c.k, c.trans_a};
  call.b = {db.get(), c.trans_b ? c.k : c.n, c.trans_b};
  call.ld_out = c.n;
  call.out_fp32 = !out_low;
  float beta = 0;
  if (out_low) {
    bias_t = testing::to_device<T>(bias), base_t = testing::to_device<T>(base);
    out_t = testing::to_device<T>(c.accumulate ? base : std::vector<float>(c.m * c.n, 7.f));
    call.out = out_t.get();
    if (c.bias) call.bias = bias_t.get();
    if (c.residual) call.c = base_t.get();
  } else {
    bias32 = testing::to_device<float>(bias), base32 = testing::to_device<float>(base);
    out32 = testing::to_device<float>(c.accumulate ? base : std::vector<float>(c.m * c.n, 7.f));
    call.out = out32.get();
    if (c.bias) call.bias = bias32.get();
    if (c.residual) call.c = base32.get();
  }
  if (c.residual || c.accumulate) beta = 1.f;
  call.beta = beta;
  MatmulEngine engine(mode);
  engine.run(call, nullptr, "test");
  engine.run(call, nullptr, "test (cached plan)");  // second call takes the cached plan
  auto want = reference(c, a, b, bias, base, beta);
  if (c.accumulate && !c.residual) {
    // Two in-place accumulations: out = base + 2 * (ab + bias).
    for (size_t i = 0; i < want.size(); ++i) want[i] = 2 * want[i] - base[i];
  }
  EXPECT_EQ(engine.cached_plans(), 1u);
  return out_low ? relative_error(testing::to_host(out_t), want) : relative_error(testing::to_host(out32), want);
}

const Case kCases[] = {
    {64, 48, 32, false, true, true, false, false},    // linear forward: x W^T + b
    {50, 96, 40, false, true, true, true, false},     // + residual (c != out)
    {40, 24, 100, true, false, false, false, true},   // weight gradient: dy^T x accumulated in place
    {33, 72, 48, false, false, false, false, false},  // input gradient: dy W
    {17, 10, 8, true, true, false, false, false},
};

TEST(Matmul, Fp32MatchesDoubleReference) {
  DDPX_REQUIRE_GPU();
  uint64_t seed = 100;
  for (const Case& c : kCases) EXPECT_LT(run_case<float>(MatmulMode::fp32, c, true, seed += 10), 1e-5);
}

TEST(Matmul, Tf32WithinTf32Rounding) {
  DDPX_REQUIRE_GPU();
  uint64_t seed = 200;
  for (const Case& c : kCases) EXPECT_LT(run_case<float>(MatmulMode::tf32, c, true, seed += 10), 2e-3);
}

TEST(Matmul, Bf16OperandsFp32OutputMatchBf16RoundedReference) {
  DDPX_REQUIRE_GPU();
  uint64_t seed = 300;
  for (const Case& c : kCases)
    EXPECT_LT(run_case<__nv_bfloat16>(MatmulMode::bf16, c, true, seed += 10), 1e-5);
}

TEST(Matmul, Bf16OutputWithinOneRounding) {
  DDPX_REQUIRE_GPU();
  uint64_t seed = 400;
  for (const Case& c : kCases)
    EXPECT_LT(run_case<__nv_bfloat16>(MatmulMode::bf16, c, false, seed += 10), 8e-3);
}

}  // namespace
}  // namespace ddpx
