// Fused attention kernels; see attention.hpp. bf16 shapes the tensor-core kernels take go there
// (attention_tensor_core_forward.cu, _backward.cu), TF32-allowed fp32 shapes to attention_tf32.cu; the rest runs
// here: CUDA-core fp32 math from shared memory, register-tiled: a block of 256 threads = 16 x 16 threads works on
// 64 x 64 tiles, each thread owning a 4 x 4 sub-tile (rows ty + 16a, columns tx + 16b), so every shared-memory load
// feeds 4 multiply-adds. Tiles of q/k/v/dO are stored row-major with head_dim + 4 floats per row: the float4 loads
// along head_dim that different rows issue in one quarter-warp then fall in different banks.
// Forward: block = (image, head, 64 queries); keys in chunks of 64 with an online softmax (running max and sum,
// flash-attention style), so shared memory does not grow with the sequence. Writes out and lse.
// Backward: block = (image, head); keys in chunks of 64 (outer), queries in tiles of 64 (inner): recompute
// P = exp(s - lse), dS = P * (dO V^T - rowsum(dO * O)) * scale; dK += dS^T Q and dV += P^T dO in registers
// (each (key, column) owned by one thread); dQ += dS K accumulated in shared memory (written straight to
// global memory when one key chunk covers the sequence). No atomics: bit-identical run to run.
#include <cuda_bf16.h>

#include <cmath>
#include <type_traits>

#include "core/error.hpp"
#include "core/cuda_check.hpp"
#include "core/kernel_launch.cuh"
#include "kernels/attention.hpp"
#include "kernels/attention_common.cuh"
#include "kernels/attention_tensor_core.hpp"
#include "kernels/attention_tf32.hpp"
#include "kernels/device_utils.cuh"

namespace ddpx {
namespace {

using kernels::from_float;
using kernels::to_float;

constexpr int kTile = 64;
constexpr int kThreads = 256;
constexpr int kPad = kTile + 1;  // row length of the 64 x 64 probability / dS tiles

struct HeadView {
  int64_t row_stride, model_dim, base;  // qkv element offset of (image b, token 0, head h, column 0)
  int64_t first_token, head_col;
};

__device__ __forceinline__ HeadView head_view(const AttentionShape& s, int bh) {
  const int64_t b = bh / s.heads, h = bh % s.heads;
  const int64_t model_dim = s.heads * s.head_dim;
  return {3 * model_dim, model_dim, b * s.seq * 3 * model_dim + h * s.head_dim, b * s.seq, h * s.head_dim};
}

// dst[r][c] = src[r * stride + c] for r < rows, zero for rows..kTile-1; c < cols (a multiple of 4). Each thread
// issues its 4-element vector loads (kLoadBatch of them) before storing any, so they are in flight together.
template <typename T>
__device__ void load_tile(float* dst, int ld, const T* src, int64_t stride, int rows, int cols) {
  constexpr int kLoadBatch = 4;
  const int vectors_per_row = cols / 4, total = kTile * vectors_per_row;
  for (int first = threadIdx.x; first < total; first += kThreads * kLoadBatch) {
    kernels::Float4 v[kLoadBatch];
#pragma unroll
    for (int u = 0; u < kLoadBatch; ++u) {
      const int e = first + u * kThreads, r = e / vectors_per_row, c = 4 * (e % vectors_per_row);
      v[u] = e < total && r < rows ? kernels::load4(src + r * stride + c) : kernels::Float4{{0.f, 0.f, 0.f, 0.f}};
    }
#pragma unroll
    for (int u = 0; u < kLoadBatch; ++u) {
      const int e = first + u * kThreads, r = e / vectors_per_row, c = 4 * (e % vectors_per_row);
      if (e < total)
        *reinterpret_cast<float4*>(dst + r * ld + c) = make_float4(v[u].v[0], v[u].v[1], v[u].v[2], v[u].v[3]);
    }
  }
}

__device__ __forceinline__ float4 load_f4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ float dot4(float4 a, float4 b) { return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w; }

__device__ __forceinline__ float half_warp_max(float v) {
#pragma unroll
  for (int offset = 8; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}
__device__ __forceinline__ float half_warp_sum(float v) {
#pragma unroll
  for (int offset = 8; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// acc[a][b] += sum_d x[(ty + 16a)][d] * y[(tx + 16b)][d]: the 4 x 4 block of x y^T this thread owns.
__device__ __forceinline__ void tile_dot(float (&acc)[4][4], const float* x, const float* y, int ld, int hd,
                                         int tx, int ty) {
  for (int d = 0; d < hd; d += 4) {
    float4 xv[4], yv[4];
#pragma unroll
    for (int a = 0; a < 4; ++a) xv[a] = load_f4(x + (ty + 16 * a) * ld + d);
#pragma unroll
    for (int b = 0; b < 4; ++b) yv[b] = load_f4(y + (tx + 16 * b) * ld + d);
#pragma unroll
    for (int a = 0; a < 4; ++a)
#pragma unroll
      for (int b = 0; b < 4; ++b) acc[a][b] += dot4(xv[a], yv[b]);
  }
}

template <typename T, int kDims>  // head_dim <= 16 * kDims; thread owns columns tx + 16c, c < kDims
__global__ void __launch_bounds__(kThreads) attention_forward_kernel(AttentionShape s, const T* qkv, T* out,
                                                                     float* lse) {
  extern __shared__ float4 smem_f4[];
  begin_after_producer();
  float* smem = reinterpret_cast<float*>(smem_f4);
  const int S = static_cast<int>(s.seq), hd = static_cast<int>(s.head_dim), ld = hd + 4;
  float* q_tile = smem;
  float* k_tile = q_tile + kTile * ld;
  float* v_tile = k_tile + kTile * ld;
  float* p_tile = v_tile + kTile * ld;  // [kTile][kPad]
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int bh = blockIdx.x;
  const HeadView view = head_view(s, bh);
  const int q0 = blockIdx.y * kTile, q_valid = min(kTile, S - q0);
  load_tile(q_tile, ld, qkv + view.base + q0 * view.row_stride, view.row_stride, q_valid, hd);

  float row_max[4], row_sum[4], acc[4][kDims];
#pragma unroll
  for (int a = 0; a < 4; ++a) {
    row_max[a] = -INFINITY, row_sum[a] = 0.f;
#pragma unroll
    for (int c = 0; c < kDims; ++c) acc[a][c] = 0.f;
  }
  for (int k0 = 0; k0 < S; k0 += kTile) {
    const int k_valid = min(kTile, S - k0);
    __syncthreads();  // the previous chunk's readers are done
    load_tile(k_tile, ld, qkv + view.base + view.model_dim + k0 * view.row_stride, view.row_stride, k_valid, hd);
    load_tile(v_tile, ld, qkv + view.base + 2 * view.model_dim + k0 * view.row_stride, view.row_stride, k_valid,
              hd);
    __syncthreads();
    float score[4][4] = {};
    tile_dot(score, q_tile, k_tile, ld, hd, tx, ty);
#pragma unroll
    for (int a = 0; a < 4; ++a) {
      float chunk_max = -INFINITY;
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        score[a][b] = tx + 16 * b < k_valid ? score[a][b] * s.scale : -INFINITY;
        chunk_max = fmaxf(chunk_max, score[a][b]);
      }
      const float new_max = fmaxf(row_max[a], half_warp_max(chunk_max));
      float chunk_sum = 0.f;
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        const float p = expf(score[a][b] - new_max);
        p_tile[(ty + 16 * a) * kPad + tx + 16 * b] = p;
        chunk_sum += p;
      }
      const float correction = expf(row_max[a] - new_max);
      row_sum[a] = row_sum[a] * correction + half_warp_sum(chunk_sum);
      row_max[a] = new_max;
#pragma unroll
      for (int c = 0; c < kDims; ++c) acc[a][c] *= correction;
    }
    __syncthreads();
    for (int j = 0; j < k_valid; ++j) {
      float p[4], v[kDims];
#pragma unroll
      for (int a = 0; a < 4; ++a) p[a] = p_tile[(ty + 16 * a) * kPad + j];
#pragma unroll
      for (int c = 0; c < kDims; ++c) v[c] = tx + 16 * c < hd ? v_tile[j * ld + tx + 16 * c] : 0.f;
#pragma unroll
      for (int a = 0; a < 4; ++a)
#pragma unroll
        for (int c = 0; c < kDims; ++c) acc[a][c] += p[a] * v[c];
    }
  }
#pragma unroll
  for (int a = 0; a < 4; ++a) {
    const int i = ty + 16 * a;
    if (i >= q_valid) continue;
    const float inv_sum = 1.f / row_sum[a];
    T* o = out + (view.first_token + q0 + i) * view.model_dim + view.head_col;
#pragma unroll
    for (int c = 0; c < kDims; ++c)
      if (tx + 16 * c < hd) o[tx + 16 * c] = from_float<T>(acc[a][c] * inv_sum);
    if (tx == 0) lse[static_cast<int64_t>(bh) * S + q0 + i] = row_max[a] + logf(row_sum[a]);
  }
}

template <typename T, int kDims>
__global__ void __launch_bounds__(kThreads)
    attention_backward_kernel(AttentionShape s, const T* qkv, const T* out, const float* lse, const T* d_out,
                              T* d_qkv) {
  extern __shared__ float4 smem_f4[];
  begin_after_producer();
  float* smem = reinterpret_cast<float*>(smem_f4);
  const int S = static_cast<int>(s.seq), hd = static_cast<int>(s.head_dim), ld = hd + 4;
  const bool single_chunk = S <= kTile;
  float* k_tile = smem;
  float* v_tile = k_tile + kTile * ld;
  float* q_tile = v_tile + kTile * ld;
  float* g_tile = q_tile + kTile * ld;  // dO
  float* p_tile = g_tile + kTile * ld;  // [kTile][kPad]
  float* ds_tile = p_tile + kTile * kPad;
  float* row_delta = ds_tile + kTile * kPad;  // [S] rowsum(dO * O)
  float* row_lse = row_delta + S;             // [S]
  float* dq_acc = row_lse + S;                // [S][ld], only when the keys take several chunks
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int bh = blockIdx.x;
  const HeadView view = head_view(s, bh);

  // rowsum(dO * O) per query: 4-column partial dots into the (not yet used) P / dS tiles, then one sum per row.
  float* partial_dots = p_tile;
  const int vectors_per_row = hd / 4;
#pragma unroll 4
  for (int e = threadIdx.x; e < S * vectors_per_row; e += kThreads) {
    const int i = e / vectors_per_row, c = 4 * (e % vectors_per_row);
    const int64_t offset = (view.first_token + i) * view.model_dim + view.head_col + c;
    const kernels::Float4 g = kernels::load4(d_out + offset), o = kernels::load4(out + offset);
    partial_dots[e] = g.v[0] * o.v[0] + g.v[1] * o.v[1] + g.v[2] * o.v[2] + g.v[3] * o.v[3];
  }
  if (!single_chunk)
    for (int e = threadIdx.x; e < S * hd; e += kThreads) dq_acc[(e / hd) * ld + e % hd] = 0.f;
  __syncthreads();
  for (int i = threadIdx.x; i < S; i += kThreads) {
    float delta = 0.f;
    for (int c = 0; c < vectors_per_row; ++c) delta += partial_dots[i * vectors_per_row + c];
    row_delta[i] = delta;
    row_lse[i] = lse[static_cast<int64_t>(bh) * S + i];
  }

  for (int k0 = 0; k0 < S; k0 += kTile) {
    const int k_valid = min(kTile, S - k0);
    __syncthreads();
    load_tile(k_tile, ld, qkv + view.base + view.model_dim + k0 * view.row_stride, view.row_stride, k_valid, hd);
    load_tile(v_tile, ld, qkv + view.base + 2 * view.model_dim + k0 * view.row_stride, view.row_stride, k_valid,
              hd);
    float d_key[4][kDims] = {}, d_value[4][kDims] = {};
    for (int q0 = 0; q0 < S; q0 += kTile) {
      const int q_valid = min(kTile, S - q0);
      __syncthreads();  // the previous tile's readers are done
      load_tile(q_tile, ld, qkv + view.base + q0 * view.row_stride, view.row_stride, q_valid, hd);
      load_tile(g_tile, ld, d_out + (view.first_token + q0) * view.model_dim + view.head_col, view.model_dim,
                q_valid, hd);
      __syncthreads();
      float score[4][4] = {}, d_prob[4][4] = {};
      tile_dot(score, q_tile, k_tile, ld, hd, tx, ty);
      tile_dot(d_prob, g_tile, v_tile, ld, hd, tx, ty);
#pragma unroll
      for (int a = 0; a < 4; ++a) {
        const int i = ty + 16 * a;
#pragma unroll
        for (int b = 0; b < 4; ++b) {
          const int j = tx + 16 * b;
          const bool valid = i < q_valid && j < k_valid;
          const float p = valid ? expf(score[a][b] * s.scale - row_lse[q0 + i]) : 0.f;
          p_tile[i * kPad + j] = p;
          ds_tile[i * kPad + j] = valid ? p * (d_prob[a][b] - row_delta[q0 + i]) * s.scale : 0.f;
        }
      }
      __syncthreads();
      // dQ rows of this tile: sum over this key chunk of dS K.
      float d_query[4][kDims] = {};
      for (int j = 0; j < k_valid; ++j) {
        float ds[4], k[kDims];
#pragma unroll
        for (int a = 0; a < 4; ++a) ds[a] = ds_tile[(ty + 16 * a) * kPad + j];
#pragma unroll
        for (int c = 0; c < kDims; ++c) k[c] = tx + 16 * c < hd ? k_tile[j * ld + tx + 16 * c] : 0.f;
#pragma unroll
        for (int a = 0; a < 4; ++a)
#pragma unroll
          for (int c = 0; c < kDims; ++c) d_query[a][c] += ds[a] * k[c];
      }
#pragma unroll
      for (int a = 0; a < 4; ++a) {
        const int i = ty + 16 * a;
        if (i >= q_valid) continue;
#pragma unroll
        for (int c = 0; c < kDims; ++c) {
          const int d = tx + 16 * c;
          if (d >= hd) continue;
          if (single_chunk)
            d_qkv[(view.first_token + q0 + i) * view.row_stride + view.head_col + d] = from_float<T>(d_query[a][c]);
          else
            dq_acc[(q0 + i) * ld + d] += d_query[a][c];
        }
      }
      // dK, dV of this key chunk: sums over this query tile of dS^T Q and P^T dO.
      for (int i = 0; i < q_valid; ++i) {
        float ds[4], p[4], q[kDims], g[kDims];
#pragma unroll
        for (int a = 0; a < 4; ++a) ds[a] = ds_tile[i * kPad + ty + 16 * a], p[a] = p_tile[i * kPad + ty + 16 * a];
#pragma unroll
        for (int c = 0; c < kDims; ++c) {
          const bool in_head = tx + 16 * c < hd;
          q[c] = in_head ? q_tile[i * ld + tx + 16 * c] : 0.f;
          g[c] = in_head ? g_tile[i * ld + tx + 16 * c] : 0.f;
        }
#pragma unroll
        for (int a = 0; a < 4; ++a)
#pragma unroll
          for (int c = 0; c < kDims; ++c) d_key[a][c] += ds[a] * q[c], d_value[a][c] += p[a] * g[c];
      }
    }
#pragma unroll
    for (int a = 0; a < 4; ++a) {
      const int j = ty + 16 * a;
      if (j >= k_valid) continue;
      T* row = d_qkv + (view.first_token + k0 + j) * view.row_stride + view.head_col;
#pragma unroll
      for (int c = 0; c < kDims; ++c) {
        const int d = tx + 16 * c;
        if (d >= hd) continue;
        row[view.model_dim + d] = from_float<T>(d_key[a][c]);
        row[2 * view.model_dim + d] = from_float<T>(d_value[a][c]);
      }
    }
  }
  if (!single_chunk) {
    __syncthreads();
    for (int e = threadIdx.x; e < S * hd; e += kThreads) {
      const int i = e / hd, d = e % hd;
      d_qkv[(view.first_token + i) * view.row_stride + view.head_col + d] = from_float<T>(dq_acc[i * ld + d]);
    }
  }
}

// d_bias[b][c] = sum over the image's tokens of d_qkv[b*seq + i][c]: thread per (image, column), fixed order.
template <typename T>
__global__ void per_image_column_sums_kernel(const T* d_qkv, int64_t seq, int64_t cols, float* d_bias) {
  begin_after_producer();
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x, b = blockIdx.y;
  if (c >= cols) return;
  const T* image = d_qkv + b * seq * cols + c;
  float total = 0.f;
  for (int64_t i = 0; i < seq; ++i) total += to_float(image[i * cols]);
  d_bias[b * cols + c] = total;
}

template <typename Kernel, typename... Args>
void launch_with_shared(Kernel kernel, dim3 grid, size_t shared, cudaStream_t stream, const AttentionShape& s,
                        const char* name, Args... args) {
  DDPX_REQUIRE(shared <= static_cast<size_t>(attention_common::max_shared_bytes()),
               "{}: sequence {} x head_dim {} needs {} bytes of shared memory, this GPU allows {}; use a larger "
               "patch size (shorter sequence)",
               name, s.seq, s.head_dim, shared, attention_common::max_shared_bytes());
  allow_dynamic_shared(kernel, shared);
  launch_after_producer(name, kernel, grid, kThreads, shared, stream, args...);
}

void check_shape(const AttentionShape& s, const char* what) {
  DDPX_REQUIRE(s.batch > 0 && s.seq > 0 && s.heads > 0 && s.head_dim > 0,
               "{}: empty shape (batch {}, seq {}, heads {}, head_dim {})", what, s.batch, s.seq, s.heads,
               s.head_dim);
  DDPX_REQUIRE(s.head_dim <= 128 && s.head_dim % 4 == 0,
               "{}: head_dim {} must be a multiple of 4 and at most 128", what, s.head_dim);
}

template <typename T, typename Launch>
void dispatch_head_dim(int64_t head_dim, Launch&& launch) {
  if (head_dim <= 32) launch(std::integral_constant<int, 2>{});
  else if (head_dim <= 64) launch(std::integral_constant<int, 4>{});
  else launch(std::integral_constant<int, 8>{});
}

}  // namespace

template <typename T>
void attention_forward(const AttentionShape& s, const T* qkv, T* out, float* lse, cudaStream_t stream) {
  check_shape(s, "attention_forward");
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    if (attention_tensor_core_supported(s, qkv, out, nullptr, nullptr)) {
      attention_forward_tensor_core(s, qkv, out, lse, stream);
      return;
    }
  } else {
    if (attention_tf32_supported(s, qkv, out, nullptr, nullptr)) {
      attention_forward_tf32(s, qkv, out, lse, stream);
      return;
    }
  }
  const int64_t ld = s.head_dim + 4;
  const size_t shared = sizeof(float) * static_cast<size_t>(3 * kTile * ld + kTile * kPad);
  const dim3 grid(static_cast<unsigned>(s.batch * s.heads), static_cast<unsigned>((s.seq + kTile - 1) / kTile));
  dispatch_head_dim<T>(s.head_dim, [&](auto dims) {
    launch_with_shared(attention_forward_kernel<T, decltype(dims)::value>, grid, shared, stream, s,
                       "attention_forward_kernel", s, qkv, out, lse);
  });
}

// Depends on the shape alone (not on the pointers' alignment, which may still send a call to other kernels).
template <typename T>
size_t attention_backward_scratch_bytes(const AttentionShape& s) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    if (attention_tensor_core_supported(s, nullptr, nullptr, nullptr, nullptr))
      return attention_backward_tensor_core_scratch_bytes(s);
  }
  return 0;
}

template <typename T>
void attention_backward(const AttentionShape& s, const T* qkv, const T* out, const float* lse, const T* d_out,
                        T* d_qkv, float* d_bias_per_image, void* scratch, size_t scratch_bytes,
                        cudaStream_t stream) {
  check_shape(s, "attention_backward");
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    if (attention_tensor_core_supported(s, qkv, out, d_out, d_qkv)) {
      attention_backward_tensor_core(s, qkv, out, lse, d_out, d_qkv, d_bias_per_image, scratch, scratch_bytes,
                                     stream);
      return;
    }
  } else {
    if (attention_tf32_supported(s, qkv, out, d_out, d_qkv)) {
      attention_backward_tf32(s, qkv, out, lse, d_out, d_qkv, d_bias_per_image, stream);
      return;
    }
  }
  DDPX_REQUIRE(s.seq * s.head_dim <= 8 * kTile * kPad,
               "attention_backward: seq {} x head_dim {} is above the supported {}", s.seq, s.head_dim,
               8 * kTile * kPad);
  const int64_t ld = s.head_dim + 4;
  const int64_t dq_floats = s.seq <= kTile ? 0 : s.seq * ld;
  const size_t shared =
      sizeof(float) * static_cast<size_t>(4 * kTile * ld + 2 * kTile * kPad + 2 * s.seq + dq_floats);
  const dim3 grid(static_cast<unsigned>(s.batch * s.heads));
  dispatch_head_dim<T>(s.head_dim, [&](auto dims) {
    launch_with_shared(attention_backward_kernel<T, decltype(dims)::value>, grid, shared, stream, s,
                       "attention_backward_kernel", s, qkv, out, lse, d_out, d_qkv);
  });
  if (d_bias_per_image) {
    const int64_t cols = 3 * s.heads * s.head_dim;
    const dim3 sums_grid(static_cast<unsigned>((cols + 255) / 256), static_cast<unsigned>(s.batch));
    launch_after_producer("per_image_column_sums_kernel", per_image_column_sums_kernel<T>, sums_grid, 256, 0, stream,
                          d_qkv, s.seq, cols, d_bias_per_image);
  }
}

template void attention_forward<float>(const AttentionShape&, const float*, float*, float*, cudaStream_t);
template void attention_forward<__nv_bfloat16>(const AttentionShape&, const __nv_bfloat16*, __nv_bfloat16*, float*,
                                               cudaStream_t);
template size_t attention_backward_scratch_bytes<float>(const AttentionShape&);
template size_t attention_backward_scratch_bytes<__nv_bfloat16>(const AttentionShape&);
template void attention_backward<float>(const AttentionShape&, const float*, const float*, const float*,
                                        const float*, float*, float*, void*, size_t, cudaStream_t);
template void attention_backward<__nv_bfloat16>(const AttentionShape&, const __nv_bfloat16*, const __nv_bfloat16*,
                                                const float*, const __nv_bfloat16*, __nv_bfloat16*, float*, void*,
                                                size_t, cudaStream_t);

}  // namespace ddpx
