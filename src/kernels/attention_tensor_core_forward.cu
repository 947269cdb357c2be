// The bf16 tensor-core attention forward (attention_tensor_core.hpp), and attention_tensor_core_supported for both
// directions. Block = (image, head, 64 queries; 128 past 64 tokens), warp = 16 queries, whose A fragments come
// straight from global memory; the head's keys and values sit in shared memory (attention_tensor_core_blocks.cuh);
// keys in chunks of 64 with an online softmax: one FFMA and one ex2.approx per score (attention_common.cuh:
// fast_exp2, online_softmax_chunk), keys masked only in the last step, one 16-key tile where that holds the
// sequence's end (Note [A last key step of one 16-key tile]). Held to 128
// registers (16 warps resident per SM: a ViT-L/32 layer's 512 (image, head) blocks fit one wave). No atomics;
// bit-identical run to run. ViT-B/16 (bench/attention_timing): 299 us, 273 after the softmax's arithmetic was
// cut to the two instructions a score, 257 with the last step's one 16-key tile (docs/results.md, 2026-12-04).
#include "kernels/attention_tensor_core.hpp"

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "core/kernel_launch.cuh"
#include "kernels/attention_common.cuh"
#include "kernels/attention_tensor_core_blocks.cuh"
#include "kernels/attention_tensor_core_fragments.cuh"

namespace ddpx {
namespace {

using namespace attention_common;
using namespace attention_mma;

template <int HD, int WARPS>
__global__ void __launch_bounds__(32 * WARPS, 16 / WARPS)
    forward_kernel(AttentionShape s, const bf16* qkv, bf16* out, float* lse) {
  constexpr int kLd = HD + 8, kSteps = HD / 16, kDimTiles = HD / 8, kQueryRows = 16 * WARPS;
  extern __shared__ uint4 smem_u4[];
  begin_after_producer();
  const int S = static_cast<int>(s.seq), S64 = round_up(S, kKeyChunk);
  bf16* k_s = reinterpret_cast<bf16*>(smem_u4);
  bf16* v_s = k_s + S64 * kLd;
  // The query blocks of one head are adjacent in launch order, so they run together and share its keys and
  // values through L2.
  const int query_blocks = (S + kQueryRows - 1) / kQueryRows;
  const int bh = blockIdx.x / query_blocks;
  const int64_t b = bh / s.heads, h = bh % s.heads, D = s.heads * HD, W = 3 * D;
  const bf16* head = qkv + b * S * W + h * HD;
  const int q0 = (blockIdx.x % query_blocks) * kQueryRows;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int r0 = 16 * warp;
  uint32_t qa[kSteps][4];  // the warp's 16 queries as A fragments, straight from global memory
#pragma unroll
  for (int kk = 0; kk < kSteps; ++kk) load_a_global(qa[kk], head + q0 * W, W, S - q0, r0, 16 * kk, g, t);
  load_rows<HD, 32 * WARPS>(k_s, head + D, W, S, S64);
  load_rows<HD, 32 * WARPS>(v_s, head + 2 * D, W, S, S64);
  __syncthreads();
  if (q0 + r0 >= S) return;

  float o[kDimTiles][4] = {};
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f};
  const float scale2 = s.scale * kLog2e;
  // One online-softmax step over the TILES 16-key tiles from key k0 (masked: the step holding the sequence's end).
  auto key_step = [&](auto tiles, auto masked, int k0) {
    constexpr int kScoreTiles = 2 * decltype(tiles)::value;  // 8-key score tiles
    float sc[kScoreTiles][4] = {};
#pragma unroll
    for (int nt = 0; nt < kScoreTiles; nt += 2)
      mma_rows_by_tile_rows<kLd, kSteps>(sc[nt], sc[nt + 1], qa, k_s, k0 + 8 * nt, lane);
    online_softmax_chunk<decltype(masked)::value>(sc, o, row_max, row_sum, k0, S, scale2, t);
#pragma unroll
    for (int kt = 0; kt < kScoreTiles / 2; ++kt) {
      uint32_t pa[4];
      c_to_a(pa, sc[2 * kt], sc[2 * kt + 1]);
      mma_a_by_tile<kLd>(o, pa, v_s, k0 + 16 * kt, lane);
    }
  };
  using std::integral_constant;
  constexpr integral_constant<bool, false> kUnmasked;
  constexpr integral_constant<bool, true> kMasked;
  // Note [A last key step of one 16-key tile]: where a single 16-key tile holds the keys left past the whole
  // chunks, the last step takes that tile alone instead of a whole chunk (ViT-B/16's and ViT-L/16's 197 keys: the
  // products and exponentials of 208 keys instead of 256). The tiles it leaves out
  // were all masked, their weights exp2(-inf) = 0, adding 0 to the row sums and 0 * V to the outputs: the same
  // bits. Other remainders keep the whole masked chunk (a variant for each tile count made the kernels spill). At
  // head_dim 80 (ViT-H/14) the chunks keep their earlier loop, written out: every form through key_step that
  // ptxas was given took 28 to 48 bytes of spills there, where that loop takes none.
  if constexpr (HD <= 64) {
    int k0 = 0;
    for (; k0 + kKeyChunk <= S; k0 += kKeyChunk) key_step(integral_constant<int, kKeyChunk / 16>{}, kUnmasked, k0);
    if (k0 < S) {
      if (S - k0 <= 16) key_step(integral_constant<int, 1>{}, kMasked, k0);
      else key_step(integral_constant<int, kKeyChunk / 16>{}, kMasked, k0);
    }
  } else {
    for (int k0 = 0; k0 < S; k0 += kKeyChunk) {
      float sc[kKeyChunk / 8][4] = {};
#pragma unroll
      for (int nt = 0; nt < kKeyChunk / 8; nt += 2)
        mma_rows_by_tile_rows<kLd, kSteps>(sc[nt], sc[nt + 1], qa, k_s, k0 + 8 * nt, lane);
      if (k0 + kKeyChunk <= S)  // only the chunk holding the sequence's end has keys to mask
        online_softmax_chunk<false>(sc, o, row_max, row_sum, k0, S, scale2, t);
      else
        online_softmax_chunk<true>(sc, o, row_max, row_sum, k0, S, scale2, t);
#pragma unroll
      for (int kt = 0; kt < kKeyChunk / 16; ++kt) {
        uint32_t pa[4];
        c_to_a(pa, sc[2 * kt], sc[2 * kt + 1]);
        mma_a_by_tile<kLd>(o, pa, v_s, k0 + 16 * kt, lane);
      }
    }
  }
  reduce_row_sums(row_sum);
  store_rows(out + (b * S + q0) * D + h * HD, D, o, r0, S - q0, g, t, 1.f / row_sum[0], 1.f / row_sum[1]);
  store_lse(lse + static_cast<int64_t>(bh) * S, row_max, row_sum, q0 + r0, S, g, t);
}

}  // namespace

bool attention_tensor_core_supported(const AttentionShape& s, const void* qkv, const void* out, const void* d_out,
                                     const void* d_qkv) {
  const bool head_dim_ok = s.head_dim == 32 || s.head_dim == 64 || s.head_dim == 80;
  if (!head_dim_ok || s.seq <= 0 || s.seq > 4096 || s.batch <= 0 || s.heads <= 0) return false;
  if (!(s.scale > 0.f)) return false;  // online_softmax_chunk takes the max of the raw scores
  if (!aligned16(qkv) || !aligned16(out) || !aligned16(d_out) || !aligned16(d_qkv)) return false;
  const size_t limit = static_cast<size_t>(max_shared_bytes());
  return forward_shared_bytes(s) <= limit && backward_shared_bytes(s) <= limit;
}

void attention_forward_tensor_core(const AttentionShape& s, const bf16* qkv, bf16* out, float* lse,
                                   cudaStream_t stream) {
  const size_t shared = forward_shared_bytes(s);
  const int warps = forward_warps(s.seq);
  const int64_t query_blocks = (s.seq + 16 * warps - 1) / (16 * warps);
  const auto grid = static_cast<unsigned>(s.batch * s.heads * query_blocks);
  dispatch_tensor_core_head_dim(s.head_dim, "tensor-core attention", [&](auto hd) {
    auto launch = [&](auto kernel, int threads) {
      allow_dynamic_shared(kernel, shared);
      launch_after_producer("attention forward_kernel (tensor core)", kernel, grid, threads, shared, stream, s, qkv,
                            out, lse);
    };
    if (warps == 4)
      launch(forward_kernel<decltype(hd)::value, 4>, 128);
    else
      launch(forward_kernel<decltype(hd)::value, 8>, 256);
  });
}

}  // namespace ddpx
