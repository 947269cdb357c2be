// Tensor-core attention kernels; see attention_tensor_core.hpp. Blocks of 4 warps; each warp issues
// mma.sync.m16n8k16 (bf16 in, fp32 accumulate) on 16-row tiles held in shared memory as bf16, rows of
// head_dim + 8 elements (the 8 rows of one ldmatrix phase then hit 32 different banks). Fragments come from
// shared memory by ldmatrix.x4 (an A fragment, or two B fragments, per instruction; .trans where B's rows are the
// tile's rows), not by 16- and 32-bit loads.
// Fragment layouts (PTX ISA, m16n8k16; g = lane / 4, t = lane % 4): A 16x16 row-major in 4 registers of bf16 pairs
// (rows g, g+8; columns 2t, 2t+1 and +8); B 16x8 in 2 registers (k = 2t, 2t+1 and +8; n = g); C 16x8 fp32 in 4
// (rows g, g+8; columns 2t, 2t+1). Two adjacent C tiles rounded to bf16 are an A fragment (P and dS never leave
// the registers).
// Forward: block = (image, head, 64 queries; 128 past 64 tokens), warp = 16 queries, whose A fragments come
// straight from global memory; the head's keys and values sit in shared memory; keys in chunks of 64 with an
// online softmax.
// Backward: up to 64 tokens, block = (image, head, phase) of 4 warps; past 64 tokens, block = (image, head) of 8
// warps running phase 0 and then phase 1 (Note [dS kept for dQ]). Up to 64 tokens a block stages all four matrices in
// shared memory with coalesced 16-byte loads and reads every fragment by ldmatrix (ViT-L/32: its 41 KB leave the
// register limit of 4 blocks per SM the binding one; A fragments loaded 4 bytes a lane from global memory had made
// 42% of its sectors excess and L1 the bottleneck). Past 64 tokens each phase keeps in shared memory only the
// matrices it streams as B operands (phase 0: q and dO; phase 1: k, in q's place) and loads its warps' own 16-row A
// fragments straight from global memory, so a block needs half the shared memory of all four (ViT-B/16's 197
// tokens: 64 instead of 122 KB). Phase 0: warp = 16 keys, loops over query tiles: recomputes S^T = K Q^T and
// dP^T = V dO^T, then dV += P^T dO and dK += dS^T Q. Phase 1: warp = 16 queries, loops over key tiles: up to 64
// tokens recomputes S and dP, past 64 reads the dS tiles phase 0 stored; dQ += dS K.
//
// Note [dS kept for dQ]: past 64 tokens phase 0 stores each 16 x 16 tile of dS / scale it computed (bf16, the
// operand dK used) as the A fragment of dS, transposed in registers by movmatrix, 512 bytes a tile in lane order,
// into the caller's scratch ([image * heads + head][query tile][key tile]); after a __syncthreads the same block
// loads K into the shared memory q had, and phase 1 takes dQ = dS K from those tiles: five tile products per
// (query, key) tile pair instead of seven, and one exponential per score instead of two. A head's tiles (ViT-B/16:
// 86.5 KB) are read back by the block that wrote them, from L2. Padded keys' dS is zeroed before it is stored
// (their scores are not -inf in phase 0, and an overflow there would reach dQ as inf * 0).
// Per-image bias sums: each warp reduces its tiles' columns into its own shared-memory row; the block adds the
// warps' rows in order. No atomics anywhere. Both kernels are held to 128 registers (16 warps
// resident per SM: a ViT-L/32 layer's 512 (image, head) forward blocks fit one wave).
// Softmax arithmetic (both kernels): one FFMA and one ex2.approx per score (attention_common.cuh: fast_exp2,
// online_softmax_chunk), keys masked only in the chunk or tile holding the sequence's end, and the backward's dS
// accumulated without its factor scale, which multiplies dK and dQ once before they are stored (exact for the
// power-of-two scale of head_dim 64). ViT-B/16 forward 299 to 273 us, backward 730 to 700 (bench/attention_timing),
// and to 643 with dS kept for dQ.
#include "kernels/attention_tensor_core.hpp"

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "core/kernel_launch.cuh"
#include "kernels/attention_common.cuh"

namespace ddpx {
namespace {

using namespace attention_common;

using bf16 = __nv_bfloat16;

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
// Forward blocks: 4 warps (64 queries) for sequences of up to 64 tokens, else 8 warps (128 queries: half as many
// copies of a head's keys and values in shared memory, two blocks resident per SM at 128 registers).
constexpr int forward_warps(int64_t seq) { return seq <= 64 ? 4 : 8; }
// Backward blocks: 4 warps up to 64 tokens (a warp per 16-row tile), else 8 (one shared-memory copy of the
// phase's two matrices for twice the warps: ViT-B/16's 197 tokens keep 16 warps resident per SM instead of 12).
constexpr int backward_warps(int64_t seq) { return seq <= 64 ? 4 : 8; }
// Matrices a backward block stages in shared memory: with 4 warps all four (q, dO, k, v in both phases, every
// fragment read by ldmatrix), with 8 only the phase's two B operands (ViT-B/16: two blocks resident per SM). The
// kernel's layout and backward_shared_bytes both ask this, so they cannot disagree.
constexpr int backward_shared_matrices(int warps) { return warps == 4 ? 4 : 2; }
constexpr int kKeyChunk = 64;            // forward: keys per online-softmax step

__device__ __forceinline__ uint32_t load_pair(const bf16* p) { return *reinterpret_cast<const uint32_t*>(p); }
__device__ __forceinline__ uint32_t pack_floats(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t shared_address(const bf16* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Four 8x8 bf16 matrices from shared memory in one instruction (ldmatrix): lanes 8m..8m+7 name the 16-byte rows
// of matrix m; register m of lane l then holds row l/4, columns 2(l%4) and 2(l%4)+1 of matrix m (Trans: of its
// transpose, i.e. rows 2(l%4) and 2(l%4)+1 of column l/4).
template <bool Trans>
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const bf16* row) {
  if constexpr (Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared_address(row)));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared_address(row)));
}

// A fragment of rows r0..r0+15, columns k0..k0+15 of a row-major tile: matrices (rows 0-7 | 8-15) x (columns
// 0-7 | 8-15) in the order a0..a3.
template <int LD>
__device__ __forceinline__ void load_a(uint32_t (&a)[4], const bf16* tile, int r0, int k0, int lane) {
  ldmatrix_x4<false>(a, tile + (r0 + (lane & 15)) * LD + k0 + 8 * (lane >> 4));
}

// The same A fragment read from a row-major matrix in global memory (row stride `stride`), rows from `valid` on
// read as zero (as load_rows pads them in shared memory).
__device__ __forceinline__ void load_a_global(uint32_t (&a)[4], const bf16* src, int64_t stride, int valid, int r0,
                                              int k0, int g, int t) {
  const int lo = r0 + g, hi = r0 + g + 8;
  const bf16* p_lo = src + static_cast<int64_t>(lo) * stride + k0 + 2 * t;
  const bf16* p_hi = src + static_cast<int64_t>(hi) * stride + k0 + 2 * t;
  a[0] = lo < valid ? load_pair(p_lo) : 0u;
  a[1] = hi < valid ? load_pair(p_hi) : 0u;
  a[2] = lo < valid ? load_pair(p_lo + 8) : 0u;
  a[3] = hi < valid ? load_pair(p_hi + 8) : 0u;
}

// B fragments (k0..k0+15) x (n0..n0+7) and x (n0+8..n0+15) where B[k][n] = tile[n][k] (the tile's rows are
// B's columns): b[j] = {b0, b1} of columns n0 + 8j.
template <int LD>
__device__ __forceinline__ void load_b_rows(uint32_t (&b)[4], const bf16* tile, int n0, int k0, int lane) {
  ldmatrix_x4<false>(b, tile + (n0 + (lane & 7) + 8 * (lane >> 4)) * LD + k0 + 8 * ((lane >> 3) & 1));
}

// The same pair of B fragments where B[k][n] = tile[k][n]: the transposing load.
template <int LD>
__device__ __forceinline__ void load_b_columns(uint32_t (&b)[4], const bf16* tile, int k0, int n0, int lane) {
  ldmatrix_x4<true>(b, tile + (k0 + (lane & 15)) * LD + n0 + 8 * (lane >> 4));
}

// The A fragment formed by two adjacent 16x8 C tiles (columns 0..7 and 8..15), rounded to bf16.
__device__ __forceinline__ void c_to_a(uint32_t (&a)[4], const float (&c0)[4], const float (&c1)[4]) {
  a[0] = pack_floats(c0[0], c0[1]), a[1] = pack_floats(c0[2], c0[3]);
  a[2] = pack_floats(c1[0], c1[1]), a[3] = pack_floats(c1[2], c1[3]);
}

// The transpose of an 8x8 bf16 matrix held as a fragment (lane l: row l/4, columns 2(l%4), 2(l%4)+1), in registers.
__device__ __forceinline__ uint32_t transpose_8x8(uint32_t x) {
  uint32_t y;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}

// dst[r][0..HD) = src[r * stride ..] for r < rows, zero for rows..padded_rows-1; 16-byte vectors, 4 in flight.
template <int HD, int THREADS = kThreads>
__device__ void load_rows(bf16* dst, const bf16* src, int64_t stride, int rows, int padded_rows) {
  constexpr int kLd = HD + 8, kVectors = HD / 8, kBatch = 4;
  const int total = padded_rows * kVectors;
  for (int first = threadIdx.x; first < total; first += THREADS * kBatch) {
    uint4 v[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int e = first + u * THREADS, r = e / kVectors, c = 8 * (e % kVectors);
      v[u] = e < total && r < rows ? *reinterpret_cast<const uint4*>(src + r * stride + c) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int e = first + u * THREADS, r = e / kVectors, c = 8 * (e % kVectors);
      if (e < total) *reinterpret_cast<uint4*>(dst + r * kLd + c) = v[u];
    }
  }
}

// Stores rows r0 + g, r0 + g + 8 (those below `valid`) of a 16 x HD C-tile set at dst + row * stride.
template <int DT>
__device__ __forceinline__ void store_rows(bf16* dst, int64_t stride, const float (&c)[DT][4], int r0, int valid,
                                           int g, int t, float factor0 = 1.f, float factor1 = 1.f) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = r0 + g + 8 * r;
    if (row >= valid) continue;
    const float f = r == 0 ? factor0 : factor1;
#pragma unroll
    for (int dt = 0; dt < DT; ++dt)
      *reinterpret_cast<uint32_t*>(dst + row * stride + 8 * dt + 2 * t) =
          pack_floats(c[dt][2 * r] * f, c[dt][2 * r + 1] * f);
  }
}

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
  for (int k0 = 0; k0 < S; k0 += kKeyChunk) {
    float sc[kKeyChunk / 8][4] = {};
#pragma unroll
    for (int nt = 0; nt < kKeyChunk / 8; nt += 2)
#pragma unroll
      for (int kk = 0; kk < kSteps; ++kk) {
        uint32_t b[4];
        load_b_rows<kLd>(b, k_s, k0 + 8 * nt, 16 * kk, lane);
        mma(sc[nt], qa[kk], b[0], b[1]);
        mma(sc[nt + 1], qa[kk], b[2], b[3]);
      }
    if (k0 + kKeyChunk <= S)  // only the chunk holding the sequence's end has keys to mask
      online_softmax_chunk<false>(sc, o, row_max, row_sum, k0, S, scale2, t);
    else
      online_softmax_chunk<true>(sc, o, row_max, row_sum, k0, S, scale2, t);
#pragma unroll
    for (int kt = 0; kt < kKeyChunk / 16; ++kt) {
      uint32_t pa[4];
      c_to_a(pa, sc[2 * kt], sc[2 * kt + 1]);
#pragma unroll
      for (int dt = 0; dt < kDimTiles; dt += 2) {
        uint32_t b[4];
        load_b_columns<kLd>(b, v_s, k0 + 16 * kt, 8 * dt, lane);
        mma(o[dt], pa, b[0], b[1]);
        mma(o[dt + 1], pa, b[2], b[3]);
      }
    }
  }
  reduce_row_sums(row_sum);
  store_rows(out + (b * S + q0) * D + h * HD, D, o, r0, S - q0, g, t, 1.f / row_sum[0], 1.f / row_sum[1]);
  store_lse(lse + static_cast<int64_t>(bh) * S, row_max, row_sum, q0 + r0, S, g, t);
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
#pragma unroll
      for (int kk = 0; kk < kSteps; ++kk) {
        uint32_t b[4];
        load_b_rows<kLd>(b, q_s, i0, 16 * kk, lane);
        mma(st[0], ka[kk], b[0], b[1]);
        mma(st[1], ka[kk], b[2], b[3]);
        load_b_rows<kLd>(b, g_s, i0, 16 * kk, lane);
        mma(dpt[0], va[kk], b[0], b[1]);
        mma(dpt[1], va[kk], b[2], b[3]);
      }
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
#pragma unroll
      for (int dt = 0; dt < kDimTiles; dt += 2) {
        uint32_t b[4];
        load_b_columns<kLd>(b, g_s, i0, 8 * dt, lane);
        mma(dv[dt], pa, b[0], b[1]);
        mma(dv[dt + 1], pa, b[2], b[3]);
        load_b_columns<kLd>(b, q_s, i0, 8 * dt, lane);
        mma(dk[dt], dsa, b[0], b[1]);
        mma(dk[dt + 1], dsa, b[2], b[3]);
      }
    }
#pragma unroll
    for (int dt = 0; dt < kDimTiles; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e) dk[dt][e] *= scale;  // dS was accumulated without its factor scale
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
#pragma unroll
        for (int dt = 0; dt < kDimTiles; dt += 2) {
          uint32_t b[4];
          load_b_columns<kLd>(b, k_s, 16 * kt, 8 * dt, lane);
          mma(dq[dt], dsa, b[0], b[1]);
          mma(dq[dt + 1], dsa, b[2], b[3]);
        }
      }
#pragma unroll
      for (int dt = 0; dt < kDimTiles; ++dt)
#pragma unroll
        for (int e = 0; e < 4; ++e) dq[dt][e] *= scale;
      store_rows(d_head + i0 * W, W, dq, 0, S - i0, g, t);
      if (d_bias) add_column_sums(my_bias, dq, i0, S, g, t);
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
#pragma unroll
      for (int kk = 0; kk < kSteps; ++kk) {
        uint32_t b[4];
        load_b_rows<kLd>(b, k_s, j0, 16 * kk, lane);
        mma(sc[0], qa[kk], b[0], b[1]);
        mma(sc[1], qa[kk], b[2], b[3]);
        load_b_rows<kLd>(b, v_s, j0, 16 * kk, lane);
        mma(dp[0], ga[kk], b[0], b[1]);
        mma(dp[1], ga[kk], b[2], b[3]);
      }
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
#pragma unroll
      for (int dt = 0; dt < kDimTiles; dt += 2) {
        uint32_t b[4];
        load_b_columns<kLd>(b, k_s, j0, 8 * dt, lane);
        mma(dq[dt], dsa, b[0], b[1]);
        mma(dq[dt + 1], dsa, b[2], b[3]);
      }
    }
#pragma unroll
    for (int dt = 0; dt < kDimTiles; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e) dq[dt][e] *= scale;
    store_rows(d_head + i0 * W, W, dq, 0, S - i0, g, t);
    if (d_bias) add_column_sums(my_bias, dq, i0, S, g, t);
  }

  if (!d_bias) return;  // uniform over the block
  __syncthreads();
  const int first_section = kStoredDs ? 0 : key_phase ? 1 : 0, end_section = kStoredDs || key_phase ? 3 : 1;
  for (int e = threadIdx.x + first_section * HD; e < end_section * HD; e += kThreadsHere) {
    float total = 0.f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) total += bias_rows[w * 3 * HD + e];
    const int section = e / HD, d = e % HD;
    d_bias[b * W + section * D + h * HD + d] = total;
  }
}

size_t forward_shared_bytes(const AttentionShape& s) {
  const int ld = static_cast<int>(s.head_dim) + 8;
  return sizeof(bf16) * static_cast<size_t>(2 * round_up(static_cast<int>(s.seq), kKeyChunk)) * ld;
}

// Bytes of phase 0's dS tiles (Note [dS kept for dQ]): 512 per 16 x 16 tile, every (image, head); 0 up to 64
// tokens.
size_t backward_ds_bytes(const AttentionShape& s) {
  if (backward_shared_matrices(backward_warps(s.seq)) == 4) return 0;
  const auto tiles = static_cast<size_t>(round_up(static_cast<int>(s.seq), 16) / 16);
  return static_cast<size_t>(s.batch * s.heads) * tiles * tiles * 32 * sizeof(uint4);
}

size_t backward_shared_bytes(const AttentionShape& s) {
  const int ld = static_cast<int>(s.head_dim) + 8, s16 = round_up(static_cast<int>(s.seq), 16);
  const int matrices = backward_shared_matrices(backward_warps(s.seq));
  return sizeof(bf16) * static_cast<size_t>(matrices * s16 * ld) +
         sizeof(float) * static_cast<size_t>(2 * s16 + backward_warps(s.seq) * 3 * s.head_dim);
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
      set_shared(kernel, shared);
      launch_after_producer("attention forward_kernel (tensor core)", kernel, grid, threads, shared, stream, s, qkv,
                            out, lse);
    };
    if (warps == 4)
      launch(forward_kernel<decltype(hd)::value, 4>, 128);
    else
      launch(forward_kernel<decltype(hd)::value, 8>, 256);
  });
}

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
      set_shared(kernel, shared);
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
