// Fused SGD / AdamW / cast against torch.optim's formulas in double on fresh random buffers, over several steps
// (step 1 initialises SGD momentum; Nesterov, dampening and weight decay exercised), and the bf16 copy written in
// the same kernel. Tolerances: params and state 1e-6 norm-wise relative; the bf16 copy must equal bf16(params)
// exactly (same round-to-nearest-even). Gradients from a 16-bit wire buffer, from low-rank factor pieces or from
// bf16 regions packed into the fp32 buffer must give the same bits as the fp32 buffer holding the same values.
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "gpu_guard.hpp"
#include "kernel_test_utils.hpp"
#include "kernels/optimizer.hpp"

namespace ddpx {
namespace {

using testing::random_vector;
using testing::relative_error;

void expect_bf16_copy(const DeviceBuffer<__nv_bfloat16>& low, const std::vector<float>& params) {
  auto got = testing::to_host(low);
  for (size_t i = 0; i < params.size(); ++i) ASSERT_EQ(got[i], testing::round_bf16(params[i])) << i;
}

TEST(Optimizer, SgdMatchesTorchFormula) {
  DDPX_REQUIRE_GPU();
  for (bool nesterov : {false, true}) {
    const int64_t n = 4096 + 64;
    SgdUpdate u;
    u.lr = 0.1f, u.momentum = 0.9f, u.dampening = nesterov ? 0.f : 0.2f, u.weight_decay = 0.01f;
    u.nesterov = nesterov;
    auto p = random_vector(n, 1), buf_start = random_vector(n, 2);
    std::vector<double> want_p(p.begin(), p.end()), want_buf(n);
    auto d_p = testing::to_device<float>(p), d_buf = testing::to_device<float>(buf_start);
    DeviceBuffer<__nv_bfloat16> low(n, "low");
    for (int64_t step = 1; step <= 3; ++step) {
      auto g = random_vector(n, 10 + step);
      auto d_g = testing::to_device<float>(g);
      for (int64_t i = 0; i < n; ++i) {
        double d = g[i] + u.weight_decay * want_p[i];
        want_buf[i] = step == 1 ? d : u.momentum * want_buf[i] + (1 - u.dampening) * d;
        d = nesterov ? d + u.momentum * want_buf[i] : want_buf[i];
        want_p[i] -= u.lr * d;
      }
      u.first_step = step == 1;
      sgd_update(d_p.get(), d_g.get(), d_buf.get(), low.get(), n, u, nullptr);
    }
    const auto got = testing::to_host(d_p);
    EXPECT_LT(relative_error(got, want_p), 1e-6);
    EXPECT_LT(relative_error(testing::to_host(d_buf), want_buf), 1e-6);
    expect_bf16_copy(low, got);
  }
}

TEST(Optimizer, SgdWithoutMomentumNeedsNoBuffer) {
  DDPX_REQUIRE_GPU();
  const int64_t n = 256;
  auto p = random_vector(n, 3), g = random_vector(n, 4);
  auto d_p = testing::to_device<float>(p), d_g = testing::to_device<float>(g);
  SgdUpdate u;
  u.lr = 0.5f;
  sgd_update(d_p.get(), d_g.get(), nullptr, nullptr, n, u, nullptr);
  std::vector<double> want(n);
  for (int64_t i = 0; i < n; ++i) want[i] = p[i] - 0.5 * g[i];
  EXPECT_LT(relative_error(testing::to_host(d_p), want), 1e-6);
}

TEST(Optimizer, AdamWMatchesTorchFormula) {
  DDPX_REQUIRE_GPU();
  const int64_t n = 8192;
  const double lr = 1e-2, b1 = 0.9, b2 = 0.99, eps = 1e-8, wd = 0.05;
  auto p = random_vector(n, 5);
  std::vector<double> want_p(p.begin(), p.end()), m(n, 0), v(n, 0);
  auto d_p = testing::to_device<float>(p), d_m = testing::to_device<float>(std::vector<float>(n, 0.f)),
       d_v = testing::to_device<float>(std::vector<float>(n, 0.f));
  DeviceBuffer<__nv_bfloat16> low(n, "low");
  for (int64_t step = 1; step <= 4; ++step) {
    auto g = random_vector(n, 20 + step);
    auto d_g = testing::to_device<float>(g);
    const double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
    for (int64_t i = 0; i < n; ++i) {
      want_p[i] *= 1 - lr * wd;
      m[i] += (1 - b1) * (g[i] - m[i]);
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      want_p[i] -= lr / bc1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + eps);
    }
    AdamWUpdate u;
    u.lr = static_cast<float>(lr), u.beta1 = static_cast<float>(b1), u.beta2 = static_cast<float>(b2);
    u.eps = static_cast<float>(eps), u.weight_decay = static_cast<float>(wd);
    u.bias_correction1 = static_cast<float>(bc1), u.bias_correction2_sqrt = static_cast<float>(std::sqrt(bc2));
    adamw_update(d_p.get(), d_g.get(), d_m.get(), d_v.get(), low.get(), n, u, nullptr);
  }
  const auto got = testing::to_host(d_p);
  EXPECT_LT(relative_error(got, want_p), 1e-6);
  EXPECT_LT(relative_error(testing::to_host(d_m), m), 1e-6);
  EXPECT_LT(relative_error(testing::to_host(d_v), v), 1e-6);
  expect_bf16_copy(low, got);
}

// SGD (momentum, Nesterov, weight decay) and AdamW over n parameters, once from the fp32 gradients `reference`
// and once from `grads` read through `wire`: parameters, optimizer state and AdamW's bf16 copy must be equal bit
// for bit.
void expect_wire_update_equals_plain(int64_t n, const float* reference, const float* grads,
                                                   const ReducedGradients& wire, const std::string& what) {
  const auto p0 = random_vector(n, 44), s0 = random_vector(n, 45, 0.1);
  std::vector<float> s_abs(s0);
  for (auto& x : s_abs) x = std::fabs(x);
  SgdUpdate sgd;
  sgd.lr = 0.1f, sgd.momentum = 0.9f, sgd.weight_decay = 0.01f, sgd.nesterov = true, sgd.first_step = false;
  auto a_p = testing::to_device<float>(p0), a_m = testing::to_device<float>(s0);
  auto b_p = testing::to_device<float>(p0), b_m = testing::to_device<float>(s0);
  sgd_update(a_p.get(), reference, a_m.get(), nullptr, n, sgd, nullptr);
  sgd.reduced = wire;
  sgd_update(b_p.get(), grads, b_m.get(), nullptr, n, sgd, nullptr);
  const std::vector<float> updated = testing::to_host(a_p);
  EXPECT_EQ(updated, testing::to_host(b_p)) << what << ": sgd parameters";
  EXPECT_EQ(testing::to_host(a_m), testing::to_host(b_m)) << what << ": sgd momentum";

  AdamWUpdate adam;
  adam.lr = 1e-2f, adam.weight_decay = 0.05f, adam.bias_correction1 = 0.19f, adam.bias_correction2_sqrt = 0.14f;
  auto c_p = testing::to_device<float>(p0), c_m = testing::to_device<float>(s0), c_v = testing::to_device<float>(s_abs);
  auto d_p = testing::to_device<float>(p0), d_m = testing::to_device<float>(s0), d_v = testing::to_device<float>(s_abs);
  DeviceBuffer<__nv_bfloat16> c_low(n, "low"), d_low(n, "low");
  adamw_update(c_p.get(), reference, c_m.get(), c_v.get(), c_low.get(), n, adam, nullptr);
  adam.reduced = wire;
  adamw_update(d_p.get(), grads, d_m.get(), d_v.get(), d_low.get(), n, adam, nullptr);
  EXPECT_EQ(testing::to_host(c_p), testing::to_host(d_p)) << what << ": adamw parameters";
  EXPECT_EQ(testing::to_host(c_m), testing::to_host(d_m)) << what << ": adamw exp_avg";
  EXPECT_EQ(testing::to_host(c_v), testing::to_host(d_v)) << what << ": adamw exp_avg_sq";
  EXPECT_EQ(testing::to_host(c_low), testing::to_host(d_low)) << what << ": adamw bf16 copy";
  EXPECT_NE(updated, p0) << what << ": the update moved the parameters";
}

// Note [Widening fused into the update]: gradients read from a 16-bit wire buffer (bf16 and fp16) give exactly the
// update over the same values widened to fp32, for SGD (momentum, Nesterov, weight decay) and AdamW,
// with the non-finite offset found in the same pass.
TEST(Optimizer, GradientsFromTheWireEqualTheWidenedBufferBitForBit) {
  DDPX_REQUIRE_GPU();
  const int64_t n = 4096 + 64;
  for (bool fp16 : {false, true}) {
    // 16-bit values on the host, and the same values widened (exactly) to fp32.
    std::vector<uint16_t> wire16(n);
    std::vector<float> widened(n);
    const auto g = random_vector(n, fp16 ? 31 : 32);
    for (int64_t i = 0; i < n; ++i) {
      if (fp16) {
        const __half h = __float2half_rn(g[i]);
        wire16[i] = __half_as_ushort(h), widened[i] = __half2float(h);
      } else {
        const __nv_bfloat16 b = __float2bfloat16_rn(g[i]);
        wire16[i] = __bfloat16_as_ushort(b), widened[i] = __bfloat162float(b);
      }
    }
    DeviceBuffer<uint16_t> d_wire(n, "wire");
    d_wire.upload(wire16);
    auto d_widened = testing::to_device<float>(widened);
    ReducedGradients from_wire;
    from_wire.data = d_wire.get(), from_wire.format = fp16 ? WireFormat::fp16 : WireFormat::bf16;
    expect_wire_update_equals_plain(n, d_widened.get(), nullptr, from_wire, fp16 ? "fp16 wire" : "bf16 wire");
  }
  // A non-finite 16-bit gradient is reported at its offset (plus the span's base), as from fp32.
  std::vector<uint16_t> wire16(256, __bfloat16_as_ushort(__float2bfloat16_rn(0.5f)));
  wire16[77] = 0x7fc0;  // bf16 NaN
  DeviceBuffer<uint16_t> d_wire(256, "wire");
  d_wire.upload(wire16);
  DeviceBuffer<unsigned long long> flag(1, "flag");
  flag.upload(std::vector<unsigned long long>{~0ull});
  auto d_p = testing::to_device<float>(random_vector(256, 35));
  SgdUpdate u;
  u.lr = 0.1f, u.reduced.data = d_wire.get(), u.nonfinite_gradient = flag.get(), u.offset_base = 1000;
  sgd_update(d_p.get(), nullptr, nullptr, nullptr, 256, u, nullptr);
  EXPECT_EQ(flag.download().at(0), 1077u);
}

// Note [Low-rank gradients fused into the update]: gradients evaluated from PowerSGD-style factor pieces give
// exactly the update over a buffer holding the same products (host fmaf in order from 0, what the hook's finish
// writes) and the plain pieces' values, for SGD (momentum, Nesterov, weight decay) and AdamW: a rank-4 piece whose
// rows are whole vectors, a rank-3 piece (zero-padded to width 4) whose rows are not, plain pieces around them.
TEST(Optimizer, LowRankGradientsEqualTheWrittenProductsBitForBit) {
  DDPX_REQUIRE_GPU();
  struct Factor {
    long long offset;
    int rows, cols, rank;
    long long p_offset, q_offset;
  };
  const Factor factors[] = {{64, 12, 16, 4, 0, 0}, {260, 10, 6, 3, 48, 64}};
  const int64_t n = 400, width = 4;
  const auto p = random_vector(48 + 30, 41), q = random_vector(64 + 18, 42), plain = random_vector(n, 43);
  std::vector<float> written(plain), garbage(plain);
  std::vector<LowRankPiece> pieces;
  long long at = 0;
  for (const Factor& f : factors) {
    pieces.push_back({at, f.offset - at, 0, 0, 0, 0});
    pieces.push_back({f.offset, static_cast<long long>(f.rows) * f.cols, f.cols, f.rank, f.p_offset, f.q_offset});
    for (int r = 0; r < f.rows; ++r)
      for (int c = 0; c < f.cols; ++c) {
        float sum = 0.f;
        for (int k = 0; k < width; ++k) {
          const float pv = k < f.rank ? p[f.p_offset + r * f.rank + k] : 0.f;
          const float qv = k < f.rank ? q[f.q_offset + c * f.rank + k] : 0.f;
          sum = std::fmaf(pv, qv, sum);
        }
        written[f.offset + r * f.cols + c] = sum;
        garbage[f.offset + r * f.cols + c] = 7.f;  // what the bucket holds instead: never read
      }
    at = f.offset + static_cast<long long>(f.rows) * f.cols;
  }
  pieces.push_back({at, n - at, 0, 0, 0, 0});
  DeviceBuffer<LowRankPiece> d_pieces(pieces.size(), "pieces");
  d_pieces.upload(pieces);
  auto d_p = testing::to_device<float>(p), d_q = testing::to_device<float>(q);
  auto d_written = testing::to_device<float>(written), d_garbage = testing::to_device<float>(garbage);
  ReducedGradients low_rank;
  low_rank.low_rank = {d_pieces.get(), static_cast<int>(pieces.size()), d_p.get(), d_q.get(), int(width)};
  // The plain pieces are read from the buffer; the factor pieces must not see its 7s.
  expect_wire_update_equals_plain(n, d_written.get(), d_garbage.get(), low_rank, "low-rank pieces");
}

// Note [bf16 weight gradients in their fp32 slots] (model_cuda/cuda_model.hpp): a buffer whose regions hold bf16
// gradients in the first half of their fp32 slots (the second half garbage, never read) gives exactly the update
// over a buffer holding those values widened, fp32 elsewhere: over the whole buffer and over a span starting
// inside a region (span_begin counts from the buffer's start), with a region at the buffer's start and one at its
// end, and with a non-finite bf16 gradient reported at its buffer offset.
TEST(Optimizer, PackedBf16RegionsEqualTheWidenedBufferBitForBit) {
  DDPX_REQUIRE_GPU();
  const int64_t n = 8192;
  const std::vector<PackedBf16Region> regions = {{0, 256}, {1024, 3072}, {5120, 64}, {7168, 1024}};
  const auto g = random_vector(n, 51);
  std::vector<float> widened(g), packed(g);
  for (const PackedBf16Region& r : regions) {
    auto* half = reinterpret_cast<uint16_t*>(packed.data() + r.offset);
    for (long long i = 0; i < r.numel; ++i) {
      const __nv_bfloat16 b = __float2bfloat16_rn(g[r.offset + i]);
      widened[r.offset + i] = __bfloat162float(b);
      half[i] = __bfloat16_as_ushort(b);
    }
    for (long long i = r.numel; i < 2 * r.numel; ++i) half[i] = 0x7fc0;  // the slots' second half: bf16 NaNs
  }
  DeviceBuffer<PackedBf16Region> d_regions(regions.size(), "regions");
  d_regions.upload(regions);
  auto d_widened = testing::to_device<float>(widened), d_packed = testing::to_device<float>(packed);
  ReducedGradients whole;
  whole.packed_bf16 = {d_regions.get(), static_cast<int>(regions.size()), 0};
  expect_wire_update_equals_plain(n, d_widened.get(), d_packed.get(), whole, "packed bf16, whole buffer");
  const int64_t begin = 2048;  // inside the second region
  ReducedGradients span;
  span.packed_bf16 = {d_regions.get(), static_cast<int>(regions.size()), begin};
  expect_wire_update_equals_plain(n - begin, d_widened.get() + begin, d_packed.get() + begin, span,
                                  "packed bf16, span from element 2048");

  // A NaN in a region is reported at its buffer offset.
  std::vector<float> with_nan(packed);
  reinterpret_cast<uint16_t*>(with_nan.data() + 1024)[1500] = 0x7fc0;
  auto d_nan = testing::to_device<float>(with_nan);
  DeviceBuffer<unsigned long long> flag(1, "flag");
  flag.upload(std::vector<unsigned long long>{~0ull});
  auto d_p = testing::to_device<float>(random_vector(n, 52));
  SgdUpdate u;
  u.lr = 0.1f, u.reduced = whole, u.nonfinite_gradient = flag.get();
  sgd_update(d_p.get(), d_nan.get(), nullptr, nullptr, n, u, nullptr);
  EXPECT_EQ(flag.download().at(0), 1024u + 1500u);
}

TEST(Optimizer, CastRoundsToNearestEven) {
  DDPX_REQUIRE_GPU();
  auto x = random_vector(1024, 9, 100.0);
  auto d_x = testing::to_device<float>(x);
  DeviceBuffer<__nv_bfloat16> low(x.size(), "low");
  cast_to_bf16(d_x.get(), low.get(), static_cast<int64_t>(x.size()), nullptr);
  expect_bf16_copy(low, x);
}

}  // namespace
}  // namespace ddpx
