// TF32 tensor-core attention kernels; see attention_tf32.hpp. Each warp issues mma.sync.m16n8k8 (tf32 in, fp32
// accumulate) on 16-row tiles held in shared memory as TF32-rounded fp32, rows of head_dim + 4 floats (the 8 rows
// of one ldmatrix phase, and the column reads below, then hit 32 different banks).
// Fragment layouts (PTX ISA, m16n8k8 tf32; g = lane / 4, t = lane % 4): A 16x8 row-major in 4 registers (rows g,
// g+8; columns t and t+4); B 8x8 in 2 (k = t and t+4; n = g); C 16x8 fp32 in 4 (rows g, g+8; columns 2t, 2t+1).
// An fp32 row of 4 floats is 16 bytes, so ldmatrix.x4 (b16) loads an A fragment, or two B fragments whose
// columns are a tile's rows, exactly as for bf16 with 4-float instead of 8-element column groups.
// Note [Permuted k slots]: a C tile of P (or dS) becomes an A fragment without shuffles by letting k slot t stand
// for the tile's column 2t and slot t+4 for column 2t+1: the thread then already holds its A values (c0, c2, c1,
// c3). The B operand of that product reads the same columns for the same slots (load_b_columns), and a dot
// product does not care which slot carries which term.
// Forward: block = (image, head, 64 queries), warp = 16 queries; keys in chunks of 64 with an online softmax.
// Backward: block = (image, head) of 8 warps, all four matrices in shared memory; warps 0-3 take 16-key tiles
// (recompute S^T = K Q^T and dP^T = V dO^T, then dV += P^T dO and dK += dS^T Q), warps 4-7 take 16-query tiles
// (recompute S and dP, dQ += dS K), rowsum(dO * O) computed once per block. Per-image bias sums: each warp reduces
// its tiles' columns into its own shared-memory row; the block adds the 8 rows in order. No atomics anywhere.
#include "kernels/attention_tf32.hpp"

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

constexpr int kQueryRows = 64;  // forward: queries per block (4 warps)
constexpr int kKeyChunk = 64;   // forward: keys per online-softmax step
constexpr int kBackwardWarps = 8;

__device__ __forceinline__ uint32_t tf32_bits(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}

__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const float* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(static_cast<uint32_t>(__cvta_generic_to_shared(row))));
}

// A fragment of rows r0..r0+15, columns k0..k0+7 of a row-major tile: matrices (rows 0-7 | 8-15) x (columns
// 0-3 | 4-7) in the order a0..a3.
template <int LD>
__device__ __forceinline__ void load_a(uint32_t (&a)[4], const float* tile, int r0, int k0, int lane) {
  ldmatrix_x4(a, tile + (r0 + (lane & 15)) * LD + k0 + 4 * (lane >> 4));
}

// B fragments (k0..k0+7) x (n0..n0+7) and x (n0+8..n0+15) where B[k][n] = tile[n][k] (the tile's rows are B's
// columns): b[0], b[1] for columns n0..n0+7, b[2], b[3] for n0+8..n0+15.
template <int LD>
__device__ __forceinline__ void load_b_rows(uint32_t (&b)[4], const float* tile, int n0, int k0, int lane) {
  ldmatrix_x4(b, tile + (n0 + (lane & 7) + 8 * (lane >> 4)) * LD + k0 + 4 * ((lane >> 3) & 1));
}

// The B fragment (k slots over tile rows k0..k0+7, Note [Permuted k slots]) x (n0..n0+7) where B[k][n] =
// tile[k][n]: slot t is row k0 + 2t, slot t + 4 row k0 + 2t + 1.
template <int LD>
__device__ __forceinline__ void load_b_columns(uint32_t& b0, uint32_t& b1, const float* tile, int k0, int n0, int g,
                                               int t) {
  const float* p = tile + (k0 + 2 * t) * LD + n0 + g;
  b0 = __float_as_uint(p[0]), b1 = __float_as_uint(p[LD]);
}

// The A fragment of a 16x8 C tile over the product's k (Note [Permuted k slots]), rounded to TF32.
__device__ __forceinline__ void c_to_a(uint32_t (&a)[4], const float (&c)[4]) {
  a[0] = tf32_bits(c[0]), a[1] = tf32_bits(c[2]), a[2] = tf32_bits(c[1]), a[3] = tf32_bits(c[3]);
}

// dst[r][0..HD) = tf32(src[r * stride ..]) for r < rows, zero for rows..padded_rows-1; 16-byte vectors, 4 in flight.
template <int HD, int THREADS>
__device__ void load_rows(float* dst, const float* src, int64_t stride, int rows, int padded_rows) {
  constexpr int kLd = HD + 4, kVectors = HD / 4, kBatch = 4;
  const int total = padded_rows * kVectors;
  for (int first = threadIdx.x; first < total; first += THREADS * kBatch) {
    float4 v[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int e = first + u * THREADS, r = e / kVectors, c = 4 * (e % kVectors);
      v[u] = e < total && r < rows ? *reinterpret_cast<const float4*>(src + r * stride + c) : make_float4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int e = first + u * THREADS, r = e / kVectors, c = 4 * (e % kVectors);
      if (e < total) {
        const float4 w = make_float4(__uint_as_float(tf32_bits(v[u].x)), __uint_as_float(tf32_bits(v[u].y)),
                                     __uint_as_float(tf32_bits(v[u].z)), __uint_as_float(tf32_bits(v[u].w)));
        *reinterpret_cast<float4*>(dst + r * kLd + c) = w;
      }
    }
  }
}

// Stores rows r0 + g, r0 + g + 8 (those below `valid`) of a 16 x HD C-tile set at dst + row * stride, scaled.
template <int DT>
__device__ __forceinline__ void store_rows(float* dst, int64_t stride, const float (&c)[DT][4], int r0, int valid,
                                           int g, int t, float factor0 = 1.f, float factor1 = 1.f) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = r0 + g + 8 * r;
    if (row >= valid) continue;
    const float f = r == 0 ? factor0 : factor1;
#pragma unroll
    for (int dt = 0; dt < DT; ++dt)
      *reinterpret_cast<float2*>(dst + row * stride + 8 * dt + 2 * t) =
          make_float2(c[dt][2 * r] * f, c[dt][2 * r + 1] * f);
  }
}

template <int HD>
__global__ void __launch_bounds__(128, 4) forward_kernel(AttentionShape s, const float* qkv, float* out, float* lse) {
  constexpr int kLd = HD + 4, kSteps = HD / 8, kDimTiles = HD / 8;
  extern __shared__ float4 smem_f4[];
  begin_after_producer();
  const int S = static_cast<int>(s.seq), S64 = round_up(S, kKeyChunk);
  float* q_s = reinterpret_cast<float*>(smem_f4);
  float* k_s = q_s + kQueryRows * kLd;
  float* v_s = k_s + S64 * kLd;
  const int query_blocks = (S + kQueryRows - 1) / kQueryRows;  // a head's query blocks adjacent: they share L2
  const int bh = blockIdx.x / query_blocks;
  const int64_t b = bh / s.heads, h = bh % s.heads, D = s.heads * HD, W = 3 * D;
  const float* head = qkv + b * S * W + h * HD;
  const int q0 = (blockIdx.x % query_blocks) * kQueryRows;
  load_rows<HD, 128>(q_s, head + q0 * W, W, min(kQueryRows, S - q0), kQueryRows);
  load_rows<HD, 128>(k_s, head + D, W, S, S64);
  load_rows<HD, 128>(v_s, head + 2 * D, W, S, S64);
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int r0 = 16 * warp;
  if (q0 + r0 >= S) return;

  float o[kDimTiles][4] = {};
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f};
  const float scale2 = s.scale * kLog2e;
  for (int k0 = 0; k0 < S; k0 += kKeyChunk) {
    float sc[kKeyChunk / 8][4] = {};
#pragma unroll
    for (int kk = 0; kk < kSteps; ++kk) {
      uint32_t a[4];
      load_a<kLd>(a, q_s, r0, 8 * kk, lane);
#pragma unroll
      for (int nt = 0; nt < kKeyChunk / 8; nt += 2) {
        uint32_t bb[4];
        load_b_rows<kLd>(bb, k_s, k0 + 8 * nt, 8 * kk, lane);
        mma(sc[nt], a, bb[0], bb[1]);
        mma(sc[nt + 1], a, bb[2], bb[3]);
      }
    }
    if (k0 + kKeyChunk <= S)  // only the chunk holding the sequence's end has keys to mask
      online_softmax_chunk<false>(sc, o, row_max, row_sum, k0, S, scale2, t);
    else
      online_softmax_chunk<true>(sc, o, row_max, row_sum, k0, S, scale2, t);
#pragma unroll
    for (int kt = 0; kt < kKeyChunk / 8; ++kt) {
      uint32_t pa[4];
      c_to_a(pa, sc[kt]);
#pragma unroll
      for (int dt = 0; dt < kDimTiles; ++dt) {
        uint32_t b0, b1;
        load_b_columns<kLd>(b0, b1, v_s, k0 + 8 * kt, 8 * dt, g, t);
        mma(o[dt], pa, b0, b1);
      }
    }
  }
  reduce_row_sums(row_sum);
  store_rows(out + (b * S + q0) * D + h * HD, D, o, r0, S - q0, g, t, 1.f / row_sum[0], 1.f / row_sum[1]);
  store_lse(lse + static_cast<int64_t>(bh) * S, row_max, row_sum, q0 + r0, S, g, t);
}

template <int HD>
__global__ void __launch_bounds__(32 * kBackwardWarps, 2)
    backward_kernel(AttentionShape s, const float* qkv, const float* out, const float* lse, const float* d_out,
                    float* d_qkv, float* d_bias) {
  constexpr int kLd = HD + 4, kSteps = HD / 8, kDimTiles = HD / 8, kThreads = 32 * kBackwardWarps;
  extern __shared__ float4 smem_f4[];
  begin_after_producer();
  const int S = static_cast<int>(s.seq), S16 = round_up(S, 16), tiles = S16 / 16;
  float* q_s = reinterpret_cast<float*>(smem_f4);
  float* k_s = q_s + S16 * kLd;
  float* v_s = k_s + S16 * kLd;
  float* g_s = v_s + S16 * kLd;                 // dO
  float* row_lse2 = g_s + S16 * kLd;            // lse * log2(e); +inf on padding rows
  float* row_delta = row_lse2 + S16;            // rowsum(dO * O)
  float* bias_rows = row_delta + S16;           // [kBackwardWarps][3][HD]
  const int bh = blockIdx.x;
  const int64_t b = bh / s.heads, h = bh % s.heads, D = s.heads * HD, W = 3 * D;
  const float* head = qkv + b * S * W + h * HD;
  const float* d_out_head = d_out + b * S * D + h * HD;
  const float* out_head = out + b * S * D + h * HD;
  float* d_head = d_qkv + b * S * W + h * HD;
  load_rows<HD, kThreads>(q_s, head, W, S, S16);
  load_rows<HD, kThreads>(k_s, head + D, W, S, S16);
  load_rows<HD, kThreads>(v_s, head + 2 * D, W, S, S16);
  load_rows<HD, kThreads>(g_s, d_out_head, D, S, S16);
  for (int e = threadIdx.x; e < kBackwardWarps * 3 * HD; e += kThreads) bias_rows[e] = 0.f;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  // rowsum(dO * O) in fp32 from global memory (not the rounded tiles): 4 lanes per row, HD / 4 floats each; the
  // loop bound is uniform per warp (8 rows a pass), as the shuffles need.
  for (int base = 8 * warp; base < S16; base += 8 * kBackwardWarps) {
    const int i = base + lane / 4, sub = lane % 4;
    float dot = 0.f;
    if (i < S)
#pragma unroll
      for (int c = 0; c < HD / 16; ++c) {
        const float4 dy = *reinterpret_cast<const float4*>(d_out_head + i * D + 4 * (sub + 4 * c));
        const float4 y = *reinterpret_cast<const float4*>(out_head + i * D + 4 * (sub + 4 * c));
        dot += dy.x * y.x + dy.y * y.y + dy.z * y.z + dy.w * y.w;
      }
    dot += __shfl_xor_sync(0xffffffffu, dot, 1);
    dot += __shfl_xor_sync(0xffffffffu, dot, 2);
    if (sub == 0) {
      row_delta[i] = dot;
      row_lse2[i] = i < S ? lse[static_cast<int64_t>(bh) * S + i] * kLog2e : INFINITY;
    }
  }
  __syncthreads();
  const float scale2 = s.scale * kLog2e, scale = s.scale;
  float* my_bias = bias_rows + warp * 3 * HD;
  constexpr int kPhaseWarps = kBackwardWarps / 2;
  const bool key_phase = warp < kPhaseWarps;
  const int phase_warp = warp % kPhaseWarps;

  // Warps 0-3: dK, dV for their key tiles.
  for (int kt = phase_warp; key_phase && kt < tiles; kt += kPhaseWarps) {
    const int j0 = 16 * kt;
    float dk[kDimTiles][4] = {}, dv[kDimTiles][4] = {};
    for (int i0 = 0; i0 < S16; i0 += 16) {
      float st[2][4] = {}, dpt[2][4] = {};  // S^T, dP^T: rows = keys j0 + g (+8), columns = queries
#pragma unroll
      for (int kk = 0; kk < kSteps; ++kk) {
        uint32_t a[4], bb[4];
        load_a<kLd>(a, k_s, j0, 8 * kk, lane);
        load_b_rows<kLd>(bb, q_s, i0, 8 * kk, lane);
        mma(st[0], a, bb[0], bb[1]);
        mma(st[1], a, bb[2], bb[3]);
        load_a<kLd>(a, v_s, j0, 8 * kk, lane);
        load_b_rows<kLd>(bb, g_s, i0, 8 * kk, lane);
        mma(dpt[0], a, bb[0], bb[1]);
        mma(dpt[1], a, bb[2], bb[3]);
      }
#pragma unroll
      for (int nt = 0; nt < 2; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int i = i0 + 8 * nt + 2 * t + (e & 1);
          const float p = exp2f(st[nt][e] * scale2 - row_lse2[i]);
          st[nt][e] = p;
          dpt[nt][e] = p * (dpt[nt][e] - row_delta[i]) * scale;
        }
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        uint32_t pa[4], dsa[4];
        c_to_a(pa, st[nt]);
        c_to_a(dsa, dpt[nt]);
#pragma unroll
        for (int dt = 0; dt < kDimTiles; ++dt) {
          uint32_t b0, b1;
          load_b_columns<kLd>(b0, b1, g_s, i0 + 8 * nt, 8 * dt, g, t);
          mma(dv[dt], pa, b0, b1);
          load_b_columns<kLd>(b0, b1, q_s, i0 + 8 * nt, 8 * dt, g, t);
          mma(dk[dt], dsa, b0, b1);
        }
      }
    }
    store_rows(d_head + j0 * W + D, W, dk, 0, S - j0, g, t);
    store_rows(d_head + j0 * W + 2 * D, W, dv, 0, S - j0, g, t);
    if (d_bias) {
      add_column_sums(my_bias + HD, dk, j0, S, g, t);
      add_column_sums(my_bias + 2 * HD, dv, j0, S, g, t);
    }
  }

  // Warps 4-7: dQ for their query tiles.
  for (int qt = phase_warp; !key_phase && qt < tiles; qt += kPhaseWarps) {
    const int i0 = 16 * qt;
    const float lse2[2] = {row_lse2[i0 + g], row_lse2[i0 + g + 8]};
    const float delta[2] = {row_delta[i0 + g], row_delta[i0 + g + 8]};
    float dq[kDimTiles][4] = {};
    for (int j0 = 0; j0 < S16; j0 += 16) {
      float sc[2][4] = {}, dp[2][4] = {};  // rows = queries i0 + g (+8), columns = keys
#pragma unroll
      for (int kk = 0; kk < kSteps; ++kk) {
        uint32_t a[4], bb[4];
        load_a<kLd>(a, q_s, i0, 8 * kk, lane);
        load_b_rows<kLd>(bb, k_s, j0, 8 * kk, lane);
        mma(sc[0], a, bb[0], bb[1]);
        mma(sc[1], a, bb[2], bb[3]);
        load_a<kLd>(a, g_s, i0, 8 * kk, lane);
        load_b_rows<kLd>(bb, v_s, j0, 8 * kk, lane);
        mma(dp[0], a, bb[0], bb[1]);
        mma(dp[1], a, bb[2], bb[3]);
      }
#pragma unroll
      for (int nt = 0; nt < 2; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int j = j0 + 8 * nt + 2 * t + (e & 1);
          const float p = j < S ? exp2f(sc[nt][e] * scale2 - lse2[e / 2]) : 0.f;
          dp[nt][e] = p * (dp[nt][e] - delta[e / 2]) * scale;
        }
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        uint32_t dsa[4];
        c_to_a(dsa, dp[nt]);
#pragma unroll
        for (int dt = 0; dt < kDimTiles; ++dt) {
          uint32_t b0, b1;
          load_b_columns<kLd>(b0, b1, k_s, j0 + 8 * nt, 8 * dt, g, t);
          mma(dq[dt], dsa, b0, b1);
        }
      }
    }
    store_rows(d_head + i0 * W, W, dq, 0, S - i0, g, t);
    if (d_bias) add_column_sums(my_bias, dq, i0, S, g, t);
  }

  if (!d_bias) return;  // uniform over the block
  __syncthreads();
  for (int e = threadIdx.x; e < 3 * HD; e += kThreads) {
    float total = 0.f;
#pragma unroll
    for (int w = 0; w < kBackwardWarps; ++w) total += bias_rows[w * 3 * HD + e];
    const int section = e / HD, d = e % HD;
    d_bias[b * W + section * D + h * HD + d] = total;
  }
}

size_t forward_shared_bytes(const AttentionShape& s) {
  const int ld = static_cast<int>(s.head_dim) + 4;
  return sizeof(float) * static_cast<size_t>(kQueryRows + 2 * round_up(static_cast<int>(s.seq), kKeyChunk)) * ld;
}

size_t backward_shared_bytes(const AttentionShape& s) {
  const int ld = static_cast<int>(s.head_dim) + 4, s16 = round_up(static_cast<int>(s.seq), 16);
  return sizeof(float) *
         (static_cast<size_t>(4 * s16 * ld) + static_cast<size_t>(2 * s16 + kBackwardWarps * 3 * s.head_dim));
}

}  // namespace

bool attention_tf32_supported(const AttentionShape& s, const void* qkv, const void* out, const void* d_out,
                              const void* d_qkv) {
  const bool head_dim_ok = s.head_dim == 32 || s.head_dim == 64 || s.head_dim == 80;
  if (!s.tf32 || !head_dim_ok || s.seq <= 0 || s.seq > 4096 || s.batch <= 0 || s.heads <= 0) return false;
  if (!(s.scale > 0.f)) return false;  // online_softmax_chunk takes the max of the raw scores
  if (!aligned16(qkv) || !aligned16(out) || !aligned16(d_out) || !aligned16(d_qkv)) return false;
  const size_t limit = static_cast<size_t>(max_shared_bytes());
  return forward_shared_bytes(s) <= limit && backward_shared_bytes(s) <= limit;
}

void attention_forward_tf32(const AttentionShape& s, const float* qkv, float* out, float* lse, cudaStream_t stream) {
  const size_t shared = forward_shared_bytes(s);
  const auto grid = static_cast<unsigned>(s.batch * s.heads * ((s.seq + kQueryRows - 1) / kQueryRows));
  dispatch_tensor_core_head_dim(s.head_dim, "TF32 attention", [&](auto hd) {
    auto kernel = forward_kernel<decltype(hd)::value>;
    allow_dynamic_shared(kernel, shared);
    launch_after_producer("attention forward_kernel (TF32 tensor cores)", kernel, grid, 128, shared, stream, s, qkv,
                          out, lse);
  });
}

void attention_backward_tf32(const AttentionShape& s, const float* qkv, const float* out, const float* lse,
                             const float* d_out, float* d_qkv, float* d_bias_per_image, cudaStream_t stream) {
  const size_t shared = backward_shared_bytes(s);
  const auto grid = static_cast<unsigned>(s.batch * s.heads);
  dispatch_tensor_core_head_dim(s.head_dim, "TF32 attention", [&](auto hd) {
    auto kernel = backward_kernel<decltype(hd)::value>;
    allow_dynamic_shared(kernel, shared);
    launch_after_producer("attention backward_kernel (TF32 tensor cores)", kernel, grid, 32 * kBackwardWarps, shared,
                          stream, s, qkv, out, lse, d_out, d_qkv, d_bias_per_image);
  });
}

}  // namespace ddpx
