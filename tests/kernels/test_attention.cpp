// Fused attention forward/backward against a double CPU loop (softmax(q k^T * scale) v per image and head) on fresh
// random qkv, for the three kernel sizes (seq*head_dim <= 4096, <= 16384, larger) and odd shapes.
// Tolerances (norm-wise relative): fp32 1e-5 (out, d_qkv, per-image bias sums), lse 1e-6; bf16 storage 2e-2
// against a reference fed the same bf16-rounded inputs (outputs and gradients are rounded to bf16 once more; the
// tensor-core path also rounds P and dS). bf16 head_dim 32/64/80 shapes exercise the tensor-core kernels.
// fp32 storage with TF32 allowed (AttentionShape::tf32): 5e-3 everywhere against the unrounded fp32 reference
// (q, k, v, dO, P and dS rounded to a 10-bit mantissa as operands); shapes the TF32 kernels do not take fall back
// to the fp32 kernels.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "gpu_guard.hpp"
#include "kernel_test_utils.hpp"
#include "kernels/attention.hpp"

namespace ddpx {
namespace {

using testing::random_vector;
using testing::relative_error;

struct AttentionReference {
  std::vector<double> out, lse, d_qkv;
};

AttentionReference reference(const AttentionShape& s, const std::vector<float>& qkv, const std::vector<float>& d_out) {
  const int64_t S = s.seq, hd = s.head_dim, D = s.heads * hd, W = 3 * D;
  AttentionReference r;
  r.out.assign(s.batch * S * D, 0), r.lse.assign(s.batch * s.heads * S, 0), r.d_qkv.assign(s.batch * S * W, 0);
  std::vector<double> p(S * S), dp(S * S);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h) {
      auto q = [&](int64_t i, int64_t d) { return static_cast<double>(qkv[(b * S + i) * W + h * hd + d]); };
      auto k = [&](int64_t j, int64_t d) { return static_cast<double>(qkv[(b * S + j) * W + D + h * hd + d]); };
      auto v = [&](int64_t j, int64_t d) { return static_cast<double>(qkv[(b * S + j) * W + 2 * D + h * hd + d]); };
      auto g = [&](int64_t i, int64_t d) { return static_cast<double>(d_out[(b * S + i) * D + h * hd + d]); };
      for (int64_t i = 0; i < S; ++i) {
        double mx = -1e300;
        for (int64_t j = 0; j < S; ++j) {
          double acc = 0;
          for (int64_t d = 0; d < hd; ++d) acc += q(i, d) * k(j, d);
          p[i * S + j] = acc * s.scale;
          mx = std::max(mx, p[i * S + j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < S; ++j) sum += (p[i * S + j] = std::exp(p[i * S + j] - mx));
        for (int64_t j = 0; j < S; ++j) p[i * S + j] /= sum;
        r.lse[(b * s.heads + h) * S + i] = mx + std::log(sum);
        for (int64_t d = 0; d < hd; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < S; ++j) acc += p[i * S + j] * v(j, d);
          r.out[(b * S + i) * D + h * hd + d] = acc;
        }
      }
      // dP = dO V^T; dS = P * (dP - rowsum(dP * P)); dQ = scale dS K; dK = scale dS^T Q; dV = P^T dO.
      for (int64_t i = 0; i < S; ++i) {
        double row = 0;
        for (int64_t j = 0; j < S; ++j) {
          double acc = 0;
          for (int64_t d = 0; d < hd; ++d) acc += g(i, d) * v(j, d);
          dp[i * S + j] = acc;
          row += acc * p[i * S + j];
        }
        for (int64_t j = 0; j < S; ++j) dp[i * S + j] = p[i * S + j] * (dp[i * S + j] - row) * s.scale;
      }
      for (int64_t i = 0; i < S; ++i)
        for (int64_t d = 0; d < hd; ++d) {
          double dq = 0, dk = 0, dv = 0;
          for (int64_t j = 0; j < S; ++j) {
            dq += dp[i * S + j] * k(j, d);
            dk += dp[j * S + i] * q(j, d);
            dv += p[j * S + i] * g(j, d);
          }
          r.d_qkv[(b * S + i) * W + h * hd + d] = dq;
          r.d_qkv[(b * S + i) * W + D + h * hd + d] = dk;
          r.d_qkv[(b * S + i) * W + 2 * D + h * hd + d] = dv;
        }
    }
  return r;
}

template <typename T>
void check_attention(int64_t batch, int64_t seq, int64_t heads, int64_t head_dim, double tolerance, uint64_t seed,
                     bool tf32 = false) {
  AttentionShape s;
  s.batch = batch, s.seq = seq, s.heads = heads, s.head_dim = head_dim, s.tf32 = tf32;
  s.scale = 1.f / std::sqrt(static_cast<float>(head_dim));
  const int64_t D = heads * head_dim, rows = batch * seq;
  auto qkv = random_vector(rows * 3 * D, seed, 1.5), d_out = random_vector(rows * D, seed + 1);
  if (!std::is_same_v<T, float>) qkv = testing::rounded_bf16(qkv), d_out = testing::rounded_bf16(d_out);
  const AttentionReference want = reference(s, qkv, d_out);
  auto d_qkv_in = testing::to_device<T>(qkv), d_d_out = testing::to_device<T>(d_out);
  auto d_o = testing::to_device<T>(std::vector<float>(rows * D, 5.f));
  auto d_grad = testing::to_device<T>(std::vector<float>(rows * 3 * D, 5.f));
  DeviceBuffer<float> lse(batch * heads * seq, "lse");
  auto d_bias = testing::to_device<float>(std::vector<float>(batch * 3 * D, 5.f));
  attention_forward<T>(s, d_qkv_in.get(), d_o.get(), lse.get(), nullptr);
  const size_t scratch_bytes = attention_backward_scratch_bytes<T>(s);
  DeviceBuffer<uint4> scratch(std::max<size_t>(1, scratch_bytes / sizeof(uint4)), "attention scratch");
  attention_backward<T>(s, d_qkv_in.get(), d_o.get(), lse.get(), d_d_out.get(), d_grad.get(), d_bias.get(),
                        scratch.get(), scratch_bytes, nullptr);
  // The key section is ~0 (each softmax row's dS sums to 0): compared within the norm of all three sections.
  std::vector<double> want_bias(batch * 3 * D, 0.0);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < seq; ++i)
      for (int64_t c = 0; c < 3 * D; ++c) want_bias[b * 3 * D + c] += want.d_qkv[(b * seq + i) * 3 * D + c];
  const std::string where =
      "seq " + std::to_string(seq) + " head_dim " + std::to_string(head_dim) + (tf32 ? " (TF32 allowed)" : "");
  EXPECT_LT(relative_error(testing::to_host(d_o), want.out), tolerance) << "out, " << where;
  const double lse_tolerance = tf32 ? 5e-3 : std::is_same_v<T, float> ? 1e-6 : 1e-2;
  EXPECT_LT(relative_error(testing::to_host(lse), want.lse), lse_tolerance) << "lse, " << where;
  EXPECT_LT(relative_error(testing::to_host(d_grad), want.d_qkv), tolerance) << "d_qkv, " << where;
  EXPECT_LT(relative_error(testing::to_host(d_bias), want_bias), tolerance) << "per-image bias sums, " << where;
}

TEST(Attention, Fp32MatchesReference) {
  DDPX_REQUIRE_GPU();
  check_attention<float>(2, 50, 4, 64, 1e-5, 1);   // ViT-*/32 sequence, 256-thread backward
  check_attention<float>(1, 197, 2, 64, 1e-5, 2);  // ViT-*/16 sequence, 512 x 32 backward
  check_attention<float>(1, 257, 1, 80, 1e-5, 3);  // ViT-H/14 sequence and head width, 512 x 64 backward
  check_attention<float>(3, 17, 4, 8, 1e-5, 4);    // vit_tiny_test
  check_attention<float>(2, 33, 3, 40, 1e-5, 5);   // odd sizes: partial query tiles and head-dim chunks
}

TEST(Attention, Tf32WithinTf32Rounding) {
  DDPX_REQUIRE_GPU();
  check_attention<float>(2, 50, 4, 64, 5e-3, 12, true);   // ViT-*/32: the TF32 tensor-core kernels
  check_attention<float>(2, 50, 3, 80, 5e-3, 13, true);   // head_dim 80 (10 k-steps)
  check_attention<float>(3, 26, 2, 32, 5e-3, 14, true);   // head_dim 32, one partial tile
  check_attention<float>(1, 129, 2, 64, 5e-3, 15, true);  // 3 query blocks, 3 key chunks, 9 tiles over 4 warps
  check_attention<float>(1, 197, 2, 64, 5e-3, 16, true);  // too long for TF32's shared memory: fp32 kernels
  check_attention<float>(2, 33, 3, 40, 5e-3, 17, true);   // head_dim 40 has no TF32 kernel: fp32 kernels
}

TEST(Attention, Bf16WithinRounding) {
  DDPX_REQUIRE_GPU();
  check_attention<__nv_bfloat16>(2, 50, 4, 64, 2e-2, 6);
  check_attention<__nv_bfloat16>(1, 197, 2, 64, 2e-2, 7);
  check_attention<__nv_bfloat16>(2, 50, 3, 80, 2e-2, 8);   // tensor cores, head_dim 80 (5 k-steps)
  check_attention<__nv_bfloat16>(3, 26, 2, 32, 2e-2, 9);   // tensor cores, head_dim 32, one partial tile
  check_attention<__nv_bfloat16>(1, 257, 1, 80, 2e-2, 10); // tensor cores, 5 key chunks, 17 tiles per warp loop
  check_attention<__nv_bfloat16>(2, 17, 4, 8, 2e-2, 11);   // no tensor-core kernel for head_dim 8: CUDA cores
  check_attention<__nv_bfloat16>(2, 64, 2, 64, 2e-2, 18);  // the longest backward with all four matrices shared
  check_attention<__nv_bfloat16>(2, 65, 2, 32, 2e-2, 19);  // the shortest with two (A fragments from global)
  check_attention<__nv_bfloat16>(1, 128, 2, 64, 2e-2, 20);  // whole key chunks and tiles only: no step masks keys
  // Note [A last key step of one 16-key tile]: 16 keys past the chunks (one tile, none masked), and 17 (the whole
  // masked chunk again).
  check_attention<__nv_bfloat16>(1, 144, 2, 64, 2e-2, 21);
  check_attention<__nv_bfloat16>(1, 145, 2, 64, 2e-2, 22);
}

// Past 64 tokens the bf16 backward keeps dS for dQ in the caller's scratch (Note [dS kept for dQ]): its size is
// stated by attention_backward_scratch_bytes, and too little is an error naming it, not a write past the end.
TEST(Attention, Bf16BackwardScratchIsSizedAndChecked) {
  DDPX_REQUIRE_GPU();
  AttentionShape s;
  s.batch = 2, s.seq = 197, s.heads = 3, s.head_dim = 64, s.scale = 0.125f;
  EXPECT_EQ(attention_backward_scratch_bytes<__nv_bfloat16>(s), size_t{2 * 3 * 13 * 13 * 512});
  EXPECT_EQ(attention_backward_scratch_bytes<float>(s), size_t{0});
  AttentionShape short_seq = s;
  short_seq.seq = 64;  // all four matrices in shared memory: dS recomputed, no scratch
  EXPECT_EQ(attention_backward_scratch_bytes<__nv_bfloat16>(short_seq), size_t{0});
  const int64_t D = s.heads * s.head_dim, rows = s.batch * s.seq;
  DeviceBuffer<__nv_bfloat16> qkv(rows * 3 * D, "qkv"), out(rows * D, "out"), d_out(rows * D, "d_out"),
      d_qkv(rows * 3 * D, "d_qkv");
  DeviceBuffer<float> lse(s.batch * s.heads * s.seq, "lse");
  const size_t needed = attention_backward_scratch_bytes<__nv_bfloat16>(s);
  DeviceBuffer<uint4> scratch(needed / sizeof(uint4), "scratch");
  try {
    attention_backward<__nv_bfloat16>(s, qkv.get(), out.get(), lse.get(), d_out.get(), d_qkv.get(), nullptr,
                                      scratch.get(), needed - 16, nullptr);
    ADD_FAILURE() << "too little scratch was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("attention_backward_scratch_bytes"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::to_string(needed)), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ddpx
