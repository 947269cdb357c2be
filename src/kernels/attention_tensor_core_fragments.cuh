// The bf16 tensor-core pieces both attention kernel files build on (attention_tensor_core_forward.cu,
// attention_tensor_core_backward.cu): mma.sync.m16n8k16 (bf16 in, fp32 accumulate) on 16-row tiles held in
// shared memory as bf16, rows of head_dim + 8 elements (the 8 rows of one ldmatrix phase then hit 32 different
// banks). Fragments come from shared memory by ldmatrix.x4 (an A fragment, or two B fragments, per instruction;
// .trans where B's rows are the tile's rows), not by 16- and 32-bit loads; warps' own A fragments may come straight
// from global memory (load_a_global).
// Fragment layouts (PTX ISA, m16n8k16; g = lane / 4, t = lane % 4): A 16x16 row-major in 4 registers of bf16 pairs
// (rows g, g+8; columns 2t, 2t+1 and +8); B 16x8 in 2 registers (k = 2t, 2t+1 and +8; n = g); C 16x8 fp32 in 4
// (rows g, g+8; columns 2t, 2t+1). Two adjacent C tiles rounded to bf16 are an A fragment (P and dS never leave
// the registers).
// Guarantees: device code only, force-inlined, working on the caller's registers and the memory it names; the
// warp-wide instructions (ldmatrix, mma, movmatrix) need the warp's 32 lanes converged, which every caller keeps
// (its loops are uniform over the warp). The tile products add into their accumulators in a fixed order (k-steps
// ascending), so a kernel's bits do not depend on how its loops are arranged around them.
#pragma once
#include <cuda_bf16.h>

#include <cstdint>

namespace ddpx::attention_mma {

using bf16 = __nv_bfloat16;

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
template <int HD, int THREADS>
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

// c0 += A x B over HD (kSteps = HD / 16 A fragments: a warp's 16 rows) where B's columns are rows n0..n0+7 of a
// shared-memory tile, c1 the same for rows n0+8..n0+15: the 16 x 16 score-like products (S = Q K^T, dP = dO V^T,
// and their transposes in the backward's phase 0).
template <int LD, int kSteps>
__device__ __forceinline__ void mma_rows_by_tile_rows(float (&c0)[4], float (&c1)[4], const uint32_t (&a)[kSteps][4],
                                                      const bf16* tile, int n0, int lane) {
#pragma unroll
  for (int kk = 0; kk < kSteps; ++kk) {
    uint32_t b[4];
    load_b_rows<LD>(b, tile, n0, 16 * kk, lane);
    mma(c0, a[kk], b[0], b[1]);
    mma(c1, a[kk], b[2], b[3]);
  }
}

// Two such products over the same k-steps, cA += A x tileA-rows and cB += B x tileB-rows, their loads and mma
// interleaved (two independent chains in flight: S^T with dP^T, S with dP in the backward).
template <int LD, int kSteps>
__device__ __forceinline__ void mma_rows_by_tile_rows_x2(float (&ca)[2][4], const uint32_t (&a)[kSteps][4],
                                                         const bf16* tile_a, float (&cb)[2][4],
                                                         const uint32_t (&b_rows)[kSteps][4], const bf16* tile_b,
                                                         int n0, int lane) {
#pragma unroll
  for (int kk = 0; kk < kSteps; ++kk) {
    uint32_t b[4];
    load_b_rows<LD>(b, tile_a, n0, 16 * kk, lane);
    mma(ca[0], a[kk], b[0], b[1]);
    mma(ca[1], a[kk], b[2], b[3]);
    load_b_rows<LD>(b, tile_b, n0, 16 * kk, lane);
    mma(cb[0], b_rows[kk], b[0], b[1]);
    mma(cb[1], b_rows[kk], b[2], b[3]);
  }
}

// acc[dt] += A x tile[k0..k0+15][8 dt..8 dt+7] for every dt < DT: a 16 x 16 A fragment (P, dS or dS^T) times 16
// rows of a shared-memory tile, all of its DT * 8 columns (O += P V, dV += P^T dO, dK += dS^T Q, dQ += dS K).
template <int LD, int DT>
__device__ __forceinline__ void mma_a_by_tile(float (&acc)[DT][4], const uint32_t (&a)[4], const bf16* tile, int k0,
                                              int lane) {
#pragma unroll
  for (int dt = 0; dt < DT; dt += 2) {
    uint32_t b[4];
    load_b_columns<LD>(b, tile, k0, 8 * dt, lane);
    mma(acc[dt], a, b[0], b[1]);
    mma(acc[dt + 1], a, b[2], b[3]);
  }
}

// Two such products over the same rows k0.., acc_a += A x tile_a and acc_b += B x tile_b, interleaved (dV and dK
// in the backward's phase 0).
template <int LD, int DT>
__device__ __forceinline__ void mma_a_by_tile_x2(float (&acc_a)[DT][4], const uint32_t (&a)[4], const bf16* tile_a,
                                                 float (&acc_b)[DT][4], const uint32_t (&b_frag)[4],
                                                 const bf16* tile_b, int k0, int lane) {
#pragma unroll
  for (int dt = 0; dt < DT; dt += 2) {
    uint32_t b[4];
    load_b_columns<LD>(b, tile_a, k0, 8 * dt, lane);
    mma(acc_a[dt], a, b[0], b[1]);
    mma(acc_a[dt + 1], a, b[2], b[3]);
    load_b_columns<LD>(b, tile_b, k0, 8 * dt, lane);
    mma(acc_b[dt], b_frag, b[0], b[1]);
    mma(acc_b[dt + 1], b_frag, b[2], b[3]);
  }
}

// acc *= factor, element by element.
template <int DT>
__device__ __forceinline__ void scale_tiles(float (&acc)[DT][4], float factor) {
#pragma unroll
  for (int dt = 0; dt < DT; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[dt][e] *= factor;
}

}  // namespace ddpx::attention_mma
