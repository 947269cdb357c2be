// The bf16 tensor-core attention backward (attention_tensor_core.hpp). Up to 64 tokens, block = (image, head,
// phase) of 4 warps; past 64 tokens, block = (image, head) of 8 warps running phase 0 and then phase 1 (Note [dS
// kept for dQ]). Up to 64 tokens a block stages all four matrices in shared memory with coalesced 16-byte loads
// and reads every fragment by ldmatrix (ViT-L/32: its 41 KB leave the register limit of 4 blocks per SM the
// binding one; A fragments loaded 4 bytes a lane from global memory had made 42% of its sectors excess and L1 the
// bottleneck). Past 64 tokens each phase keeps in shared memory only the matrices it streams as B operands (phase
// 0: q and dO; phase 1: k, in q's place) and loads its warps' own 16-row A fragments straight from global memory,
// so a block needs half the shared memory of all four (ViT-B/16's 197 tokens: 64 instead of 122 KB). Phase 0:
// warp = 16 keys, loops over query tiles: recomputes S^T = K Q^T and dP^T = V dO^T, then dV += P^T dO and
// dK += dS^T Q. Phase 1: warp = 16 queries, loops over key tiles: up to 64 tokens recomputes S and dP, past 64
// reads the dS tiles phase 0 stored; dQ += dS K.
// Softmax arithmetic: one FFMA and one ex2.approx per score, keys masked only in the tile holding the sequence's
// end, and dS accumulated without its factor scale, which multiplies dK and dQ once before they are stored (exact
// for the power-of-two scale of head_dim 64).
// Per-image bias sums: each warp reduces its tiles' columns into its own shared-memory row; the block adds the
// warps' rows in order. No atomics anywhere; bit-identical run to run. Held to 128 registers (16 warps resident per
// SM). ViT-B/16 (bench/attention_timing): 730 us, 700 after the softmax's arithmetic, 643 with dS kept for dQ.
//
// Note [dS kept for dQ]: past 64 tokens phase 0 stores each 16 x 16 tile of dS / scale it computed (bf16, the
// operand dK used) as the A fragment of dS, transposed in registers by movmatrix, 512 bytes a tile in lane order,
// into the caller's scratch ([image * heads + head][query tile][key tile]); after a __syncthreads the same block
// loads K into the shared memory q had, and phase 1 takes dQ = dS K from those tiles: five tile products per
// (query, key) tile pair instead of seven, and one exponential per score instead of two. A head's tiles (ViT-B/16:
// 86.5 KB) are read back by the block that wrote them, from L2. Padded keys' dS is zeroed before it is stored
// (their scores are not -inf in phase 0, and an overflow there would reach dQ as inf * 0).
#include "kernels/attention_tensor_core.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>

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

// The end of a warp's dQ tile, rows i0..i0+15 of the head (those below S real; d_head and row stride W as the
// kernel has them): times scale (dS was accumulated without it), stored, and with `bias_sums` its columns added to
// the warp's bias row.
template <int DT>
__device__ __forceinline__ void finish_dq_tile(float (&dq)[DT][4], float scale, bf16* d_head, int64_t W, int i0, int S,
                                               bool bias_sums, float* bias_row, int g, int t) {
  scale_tiles(dq, scale);
  store_rows(d_head + i0 * W, W, dq, 0, S - i0, g, t);
  if (bias_sums) add_column_sums(bias_row, dq, i0, S, g, t);
}

template <int HD, int WARPS>
__global__ void __launch_bounds__(32 * WARPS, 16 / WARPS)
    backward_kernel(AttentionShape s, const bf16* qkv, const bf16* out, const float* lse, const bf16* d_out,
                    bf16* d_qkv, float* d_bias, uint4* ds_tiles) {
  constexpr int kLd = HD + 8, kSteps = HD / 16, kDimTiles = HD / 8, kThreadsHere = 32 * WARPS;
  extern __shared__ uint4 smem_u4[];
  begin_after_producer();
  const int S = static_cast<int>(s.seq), S16 = round_up(S, 16), tiles = S16 / 16;
  // Up to 64 tokens (4 warps) the A operands sit in shared memory too (all_shared; backward_shared_matrices), and
  // all of phase 0 runs first (a short sequence's layer sits in L2). Past 64 tokens one block runs both phases of
  // its head, phase 1 from the dS tiles phase 0 stored (Note [dS kept for dQ]).
  const int heads_total = static_cast<int>(s.batch * s.heads);
  constexpr int kMatrices = backward_shared_matrices(WARPS);
  constexpr bool all_shared = kMatrices == 4;
  constexpr bool kStoredDs = !all_shared;
  const bool key_phase = kStoredDs || static_cast<int>(blockIdx.x) < heads_total;
  bf16* first_s = reinterpret_cast<bf16*>(smem_u4);  // phase 0: q; phase 1: k
  bf16* second_s = first_s + S16 * kLd;               // phase 0: dO; phase 1: v
  bf16* third_s = second_s + S16 * kLd;               // all_shared: phase 0: k; phase 1: q
  bf16* fourth_s = third_s + S16 * kLd;               // all_shared: phase 0: v; phase 1: dO
  float* row_lse2 = reinterpret_cast<float*>(first_s + kMatrices * S16 * kLd);  // lse * log2(e); +inf on padding
  float* row_delta = row_lse2 + S16;                                  // rowsum(dO * O)
  float* bias_rows = row_delta + S16;                                 // [WARPS][3][HD]
  const int bh = kStoredDs ? static_cast<int>(blockIdx.x) : static_cast<int>(blockIdx.x) % heads_total;
  const int64_t b = bh / s.heads, h = bh % s.heads, D = s.heads * HD, W = 3 * D;
  const bf16* head = qkv + b * S * W + h * HD;
  const bf16* d_out_head = d_out + b * S * D + h * HD;
  const bf16* out_head = out + b * S * D + h * HD;
  bf16* d_head = d_qkv + b * S * W + h * HD;
  if (key_phase) {
    load_rows<HD, kThreadsHere>(first_s, head, W, S, S16);
    load_rows<HD, kThreadsHere>(second_s, d_out_head, D, S, S16);
    if constexpr (all_shared) {
      load_rows<HD, kThreadsHere>(third_s, head + D, W, S, S16);
      load_rows<HD, kThreadsHere>(fourth_s, head + 2 * D, W, S, S16);
    }
  } else {
    load_rows<HD, kThreadsHere>(first_s, head + D, W, S, S16);
    load_rows<HD, kThreadsHere>(second_s, head + 2 * D, W, S, S16);
    if constexpr (all_shared) {
      load_rows<HD, kThreadsHere>(third_s, head, W, S, S16);
      load_rows<HD, kThreadsHere>(fourth_s, d_out_head, D, S, S16);
    }
  }
  const bf16* q_s = first_s;  // read in phase 0 only
  const bf16* g_s = second_s;
  const bf16* k_s = first_s;  // read in phase 1 only
  const bf16* v_s = second_s;
  for (int e = threadIdx.x; e < WARPS * 3 * HD; e += kThreadsHere) bias_rows[e] = 0.f;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  // rowsum(dO * O): kRowLanes adjacent lanes per row, a 16-byte vector of each (a row's HD values in one
  // coalesced piece; lanes past HD / 8 idle), kBatch rows per thread in flight at once; the lanes' partial dots
  // are added by a butterfly.
  constexpr int kVectors = HD / 8, kRowLanes = kVectors <= 4 ? 4 : kVectors <= 8 ? 8 : 16;
  constexpr int kRowsPerPass = kThreadsHere / kRowLanes, kBatch = 4;
  static_assert(HD % 8 == 0 && kVectors <= 16, "rows of at most 16 whole 16-byte vectors");
  const int lane_in_row = threadIdx.x % kRowLanes;
  for (int i0 = 0; i0 < S16; i0 += kBatch * kRowsPerPass) {  // uniform over the block: the shuffles see every lane
    uint4 dy[kBatch], y[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int i = i0 + u * kRowsPerPass + static_cast<int>(threadIdx.x) / kRowLanes;
      const bool load = i < S && lane_in_row < kVectors;
      dy[u] = load ? *reinterpret_cast<const uint4*>(d_out_head + i * D + 8 * lane_in_row) : make_uint4(0, 0, 0, 0);
      y[u] = load ? *reinterpret_cast<const uint4*>(out_head + i * D + 8 * lane_in_row) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int i = i0 + u * kRowsPerPass + static_cast<int>(threadIdx.x) / kRowLanes;
      const auto* dy2 = reinterpret_cast<const __nv_bfloat162*>(&dy[u]);
      const auto* y2 = reinterpret_cast<const __nv_bfloat162*>(&y[u]);
      float dot = 0.f;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float2 a = __bfloat1622float2(dy2[e]), o = __bfloat1622float2(y2[e]);
        dot += a.x * o.x + a.y * o.y;
      }
#pragma unroll
      for (int offset = kRowLanes / 2; offset > 0; offset /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, offset);
      if (lane_in_row == 0 && i < S16) {
        row_delta[i] = dot;
        row_lse2[i] = i < S ? lse[static_cast<int64_t>(bh) * S + i] * kLog2e : INFINITY;
      }
    }
  }
  __syncthreads();
  const float scale2 = s.scale * kLog2e, scale = s.scale;
  float* my_bias = bias_rows + warp * 3 * HD;

  // Phase 0: dK, dV for the key tiles of this warp.
  for (int kt = warp; key_phase && kt < tiles; kt += WARPS) {
    const int j0 = 16 * kt;
    uint32_t ka[kSteps][4], va[kSteps][4];
#pragma unroll
    for (int kk = 0; kk < kSteps; ++kk) {
      if constexpr (all_shared) {
        load_a<kLd>(ka[kk], third_s, j0, 16 * kk, lane);
        load_a<kLd>(va[kk], fourth_s, j0, 16 * kk, lane);
      } else {
        load_a_global(ka[kk], head + D, W, S, j0, 16 * kk, g, t);
        load_a_global(va[kk], head + 2 * D, W, S, j0, 16 * kk, g, t);
      }
    }
    float dk[kDimTiles][4] = {}, dv[kDimTiles][4] = {};
    for (int i0 = 0; i0 < S16; i0 += 16) {
      float st[2][4] = {}, dpt[2][4] = {};  // S^T, dP^T: rows = keys j0 + g (+8), columns = queries
      mma_rows_by_tile_rows_x2<kLd, kSteps>(st, ka, q_s, dpt, va, g_s, i0, lane);
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        // Columns 2t, 2t + 1 of this tile are queries i, i + 1: one 8-byte read of each per-query value.
        const int i = i0 + 8 * nt + 2 * t;
        const float2 lse2 = *reinterpret_cast<const float2*>(row_lse2 + i);
        const float2 delta = *reinterpret_cast<const float2*>(row_delta + i);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float p = fast_exp2(fmaf(st[nt][e], scale2, -(e & 1 ? lse2.y : lse2.x)));  // padding: +inf -> 0
          st[nt][e] = p;
          dpt[nt][e] = p * (dpt[nt][e] - (e & 1 ? delta.y : delta.x));  // dS / scale: scale applied to dK
        }
      }
      if (kStoredDs && j0 + 16 > S) {  // the tile holding the sequence's end (uniform over the warp)
#pragma unroll
        for (int nt = 0; nt < 2; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            if (j0 + g + 8 * (e / 2) >= S) dpt[nt][e] = 0.f;  // rows are keys: padded keys' dS never reaches dQ
      }
      uint32_t pa[4], dsa[4];
      c_to_a(pa, st[0], st[1]);
      c_to_a(dsa, dpt[0], dpt[1]);
      if constexpr (kStoredDs) {
        // dsa is the A fragment of dS^T (rows keys): the A fragment of dS has the transposed 8x8 blocks, the
        // off-diagonal two exchanged.
        const uint4 tile = make_uint4(transpose_8x8(dsa[0]), transpose_8x8(dsa[2]), transpose_8x8(dsa[1]),
                                      transpose_8x8(dsa[3]));
        ds_tiles[((static_cast<int64_t>(bh) * tiles + i0 / 16) * tiles + kt) * 32 + lane] = tile;
      }
      mma_a_by_tile_x2<kLd>(dv, pa, g_s, dk, dsa, q_s, i0, lane);
    }
    scale_tiles(dk, scale);  // dS was accumulated without its factor scale
    store_rows(d_head + j0 * W + D, W, dk, 0, S - j0, g, t);
    store_rows(d_head + j0 * W + 2 * D, W, dv, 0, S - j0, g, t);
    if (d_bias) {
      add_column_sums(my_bias + HD, dk, j0, S, g, t);
      add_column_sums(my_bias + 2 * HD, dv, j0, S, g, t);
    }
  }

  if constexpr (kStoredDs) {
    // Phase 1 from the stored dS tiles: K replaces q in shared memory once every warp is done with q; the
    // __syncthreads also makes this block's dS stores visible to all its warps.
    __syncthreads();
    load_rows<HD, kThreadsHere>(first_s, head + D, W, S, S16);
    __syncthreads();
    for (int qt = warp; qt < tiles; qt += WARPS) {
      const int i0 = 16 * qt;
      const uint4* tiles_of_row = ds_tiles + (static_cast<int64_t>(bh) * tiles + qt) * tiles * 32 + lane;
      float dq[kDimTiles][4] = {};
      uint4 next = tiles_of_row[0];
      for (int kt = 0; kt < tiles; ++kt) {
        const uint32_t dsa[4] = {next.x, next.y, next.z, next.w};
        if (kt + 1 < tiles) next = tiles_of_row[(kt + 1) * 32];  // the next tile in flight during this one's products
        mma_a_by_tile<kLd>(dq, dsa, k_s, 16 * kt, lane);
      }
      finish_dq_tile(dq, scale, d_head, W, i0, S, d_bias != nullptr, my_bias, g, t);
    }
  }

  // Phase 1 (up to 64 tokens): dQ for the query tiles of this warp, S and dP recomputed.
  for (int qt = warp; !kStoredDs && !key_phase && qt < tiles; qt += WARPS) {
    const int i0 = 16 * qt;
    uint32_t qa[kSteps][4], ga[kSteps][4];
#pragma unroll
    for (int kk = 0; kk < kSteps; ++kk) {
      if constexpr (all_shared) {
        load_a<kLd>(qa[kk], third_s, i0, 16 * kk, lane);
        load_a<kLd>(ga[kk], fourth_s, i0, 16 * kk, lane);
      } else {
        load_a_global(qa[kk], head, W, S, i0, 16 * kk, g, t);
        load_a_global(ga[kk], d_out_head, D, S, i0, 16 * kk, g, t);
      }
    }
    const float lse2[2] = {row_lse2[i0 + g], row_lse2[i0 + g + 8]};
    const float delta[2] = {row_delta[i0 + g], row_delta[i0 + g + 8]};
    float dq[kDimTiles][4] = {};
    for (int j0 = 0; j0 < S16; j0 += 16) {
      float sc[2][4] = {}, dp[2][4] = {};  // rows = queries i0 + g (+8), columns = keys
      mma_rows_by_tile_rows_x2<kLd, kSteps>(sc, qa, k_s, dp, ga, v_s, j0, lane);
      if (j0 + 16 > S) {  // the tile holding the sequence's end (uniform over the warp): padded keys weigh 0
#pragma unroll
        for (int nt = 0; nt < 2; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            if (j0 + 8 * nt + 2 * t + (e & 1) >= S) sc[nt][e] = -INFINITY;
      }
#pragma unroll
      for (int nt = 0; nt < 2; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float p = fast_exp2(fmaf(sc[nt][e], scale2, -lse2[e / 2]));
          dp[nt][e] = p * (dp[nt][e] - delta[e / 2]);  // dS / scale: scale applied to dQ
        }
      uint32_t dsa[4];
      c_to_a(dsa, dp[0], dp[1]);
      mma_a_by_tile<kLd>(dq, dsa, k_s, j0, lane);
    }
    finish_dq_tile(dq, scale, d_head, W, i0, S, d_bias != nullptr, my_bias, g, t);
  }

  if (!d_bias) return;  // uniform over the block
  __syncthreads();
  // Sections q, k, v of the bias row: phase 0 made k and v, phase 1 q (a block with kStoredDs runs both).
  const int first_section = key_phase && !kStoredDs ? 1 : 0, end_section = key_phase ? 3 : 1;
  for (int e = threadIdx.x + first_section * HD; e < end_section * HD; e += kThreadsHere) {
    float total = 0.f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) total += bias_rows[w * 3 * HD + e];
    const int section = e / HD, d = e % HD;
    d_bias[b * W + section * D + h * HD + d] = total;
  }
}

}  // namespace

size_t attention_backward_tensor_core_scratch_bytes(const AttentionShape& s) { return backward_ds_bytes(s); }

void attention_backward_tensor_core(const AttentionShape& s, const bf16* qkv, const bf16* out, const float* lse,
                                    const bf16* d_out, bf16* d_qkv, float* d_bias_per_image, void* scratch,
                                    size_t scratch_bytes, cudaStream_t stream) {
  const size_t shared = backward_shared_bytes(s), ds_bytes = backward_ds_bytes(s);
  DDPX_REQUIRE(scratch_bytes >= ds_bytes && (ds_bytes == 0 || aligned16(scratch)),
               "attention_backward: seq {} needs {} bytes of 16-byte aligned scratch "
               "(attention_backward_scratch_bytes), given {} at {}",
               s.seq, ds_bytes, scratch_bytes, scratch);
  // (image, head) x phase up to 64 tokens; past 64 a block runs both phases of its head (Note [dS kept for dQ]).
  const auto grid = static_cast<unsigned>(s.batch * s.heads * (ds_bytes == 0 ? 2 : 1));
  auto* ds_tiles = static_cast<uint4*>(ds_bytes == 0 ? nullptr : scratch);
  dispatch_tensor_core_head_dim(s.head_dim, "tensor-core attention", [&](auto hd) {
    auto launch = [&](auto kernel, int threads) {
      allow_dynamic_shared(kernel, shared);
      launch_after_producer("attention backward_kernel (tensor core)", kernel, grid, threads, shared, stream, s, qkv,
                            out, lse, d_out, d_qkv, d_bias_per_image, ds_tiles);
    };
    if (backward_warps(s.seq) == 4)
      launch(backward_kernel<decltype(hd)::value, 4>, 128);
    else
      launch(backward_kernel<decltype(hd)::value, 8>, 256);
  });
}

}  // namespace ddpx
