// Fused attention kernels; see attention.hpp. CUDA-core fp32 math from shared memory, sized for short sequences.
// Forward: block = (image, head, tile of kForwardQueryTile queries); K and V of the head live in shared memory
// (rows padded to head_dim+1 floats so lanes reading different keys hit different banks); one warp per query:
// lanes own keys for the scores and softmax, then own head-dim columns for P @ V.
// Backward: block = (image, head); K, V resident; queries in tiles of kBackwardQueryTile: recompute P from lse,
// dS = P * (dO V^T - rowsum(dO * O)) * scale, dQ for the tile written directly, and dK += dS^T Q, dV += P^T dO
// accumulated in registers, each (key, column) owned by exactly one thread, so no atomics are needed.
#include <cuda_bf16.h>

#include <cmath>

#include "core/error.hpp"
#include "cuda/cuda_check.hpp"
#include "kernels/attention.hpp"
#include "kernels/device_utils.cuh"

namespace ddpx {
namespace {

using kernels::from_float;
using kernels::to_float;
using kernels::warp_max;
using kernels::warp_sum;

constexpr int kForwardThreads = 256;
constexpr int kForwardQueryTile = 32;
constexpr int kBackwardQueryTile = 16;

struct HeadView {
  int64_t row_stride, model_dim, base;  // qkv element offset of (image b, token 0, head h, column 0)
};

__device__ __forceinline__ HeadView head_view(const AttentionShape& s, int bh) {
  const int64_t b = bh / s.heads, h = bh % s.heads;
  const int64_t model_dim = s.heads * s.head_dim;
  return {3 * model_dim, model_dim, b * s.seq * 3 * model_dim + h * s.head_dim};
}

template <typename T>
__device__ void load_rows(float* dst, int ld_dst, const T* src, int64_t src_stride, int rows, int cols) {
  for (int e = threadIdx.x; e < rows * cols; e += blockDim.x) {
    const int r = e / cols, c = e % cols;
    dst[r * ld_dst + c] = to_float(src[r * src_stride + c]);
  }
}

__device__ __forceinline__ float dot(const float* a, const float* b, int n) {
  float acc = 0.f;
#pragma unroll 8
  for (int d = 0; d < n; ++d) acc += a[d] * b[d];
  return acc;
}

template <typename T, int kDimChunks>
__global__ void __launch_bounds__(kForwardThreads) attention_forward_kernel(AttentionShape s, const T* qkv, T* out,
                                                                            float* lse) {
  extern __shared__ float smem[];
  const int S = static_cast<int>(s.seq), hd = static_cast<int>(s.head_dim), ldk = hd + 1;
  float* keys = smem;
  float* values = keys + S * ldk;
  float* queries = values + S * ldk;
  float* probs = queries + kForwardQueryTile * ldk;  // [tile][S]
  const int bh = blockIdx.x;
  const HeadView view = head_view(s, bh);
  const int q0 = blockIdx.y * kForwardQueryTile;
  const int q_count = min(kForwardQueryTile, S - q0);
  load_rows(keys, ldk, qkv + view.base + view.model_dim, view.row_stride, S, hd);
  load_rows(values, ldk, qkv + view.base + 2 * view.model_dim, view.row_stride, S, hd);
  load_rows(queries, ldk, qkv + view.base + q0 * view.row_stride, view.row_stride, q_count, hd);
  __syncthreads();

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int i = warp; i < q_count; i += kForwardThreads / 32) {
    float* p = probs + i * S;
    const float* q = queries + i * ldk;
    float row_max = -INFINITY;
    for (int j = lane; j < S; j += 32) {
      const float score = dot(q, keys + j * ldk, hd) * s.scale;
      p[j] = score;
      row_max = fmaxf(row_max, score);
    }
    row_max = warp_max(row_max);
    float row_sum = 0.f;
    for (int j = lane; j < S; j += 32) {
      const float e = expf(p[j] - row_max);
      p[j] = e;
      row_sum += e;
    }
    row_sum = warp_sum(row_sum);
    __syncwarp();
    float acc[kDimChunks];
#pragma unroll
    for (int c = 0; c < kDimChunks; ++c) acc[c] = 0.f;
    for (int j = 0; j < S; ++j) {
      const float pj = p[j];
      const float* v = values + j * ldk;
#pragma unroll
      for (int c = 0; c < kDimChunks; ++c)
        if (lane + 32 * c < hd) acc[c] += pj * v[lane + 32 * c];
    }
    const float inv_sum = 1.f / row_sum;
    const int64_t token = (bh / s.heads) * s.seq + q0 + i;
    T* o = out + token * view.model_dim + (bh % s.heads) * s.head_dim;
#pragma unroll
    for (int c = 0; c < kDimChunks; ++c)
      if (lane + 32 * c < hd) o[lane + 32 * c] = from_float<T>(acc[c] * inv_sum);
    if (lane == 0) lse[static_cast<int64_t>(bh) * S + q0 + i] = row_max + logf(row_sum);
  }
}

template <typename T, int kThreads, int kOwned>
__global__ void __launch_bounds__(kThreads)
    attention_backward_kernel(AttentionShape s, const T* qkv, const T* out, const float* lse, const T* d_out,
                              T* d_qkv) {
  extern __shared__ float smem[];
  const int S = static_cast<int>(s.seq), hd = static_cast<int>(s.head_dim), ldk = hd + 1, ldp = S + 1;
  float* keys = smem;
  float* values = keys + S * ldk;
  float* queries = values + S * ldk;                   // [tile][ldk]
  float* d_outs = queries + kBackwardQueryTile * ldk;  // [tile][ldk]
  float* probs = d_outs + kBackwardQueryTile * ldk;    // [tile][ldp]
  float* d_scores = probs + kBackwardQueryTile * ldp;  // [tile][ldp], already times scale
  float* row_delta = d_scores + kBackwardQueryTile * ldp;  // [tile] rowsum(dO * O)
  float* row_lse = row_delta + kBackwardQueryTile;         // [tile]
  const int bh = blockIdx.x;
  const HeadView view = head_view(s, bh);
  const int64_t head_col = (bh % s.heads) * s.head_dim;
  const int64_t first_token = (bh / s.heads) * s.seq;
  load_rows(keys, ldk, qkv + view.base + view.model_dim, view.row_stride, S, hd);
  load_rows(values, ldk, qkv + view.base + 2 * view.model_dim, view.row_stride, S, hd);

  float d_key[kOwned], d_value[kOwned];
#pragma unroll
  for (int o = 0; o < kOwned; ++o) d_key[o] = d_value[o] = 0.f;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  constexpr int kWarps = kThreads / 32;
  for (int q0 = 0; q0 < S; q0 += kBackwardQueryTile) {
    const int q_count = min(kBackwardQueryTile, S - q0);
    load_rows(queries, ldk, qkv + view.base + q0 * view.row_stride, view.row_stride, q_count, hd);
    load_rows(d_outs, ldk, d_out + (first_token + q0) * view.model_dim + head_col, view.model_dim, q_count, hd);
    for (int i = warp; i < q_count; i += kWarps) {
      const int64_t offset = (first_token + q0 + i) * view.model_dim + head_col;
      float delta = 0.f;
      for (int d = lane; d < hd; d += 32) delta += to_float(d_out[offset + d]) * to_float(out[offset + d]);
      delta = warp_sum(delta);
      if (lane == 0) {
        row_delta[i] = delta;
        row_lse[i] = lse[static_cast<int64_t>(bh) * S + q0 + i];
      }
    }
    __syncthreads();
    for (int i = warp; i < q_count; i += kWarps) {
      const float* q = queries + i * ldk;
      const float* g = d_outs + i * ldk;
      for (int j = lane; j < S; j += 32) {
        const float p = expf(dot(q, keys + j * ldk, hd) * s.scale - row_lse[i]);
        const float dp = dot(g, values + j * ldk, hd);
        probs[i * ldp + j] = p;
        d_scores[i * ldp + j] = p * (dp - row_delta[i]) * s.scale;
      }
    }
    __syncthreads();
    for (int e = threadIdx.x; e < q_count * hd; e += kThreads) {
      const int i = e / hd, d = e % hd;
      float acc = 0.f;
      for (int j = 0; j < S; ++j) acc += d_scores[i * ldp + j] * keys[j * ldk + d];
      d_qkv[(first_token + q0 + i) * view.row_stride + head_col + d] = from_float<T>(acc);
    }
#pragma unroll
    for (int o = 0; o < kOwned; ++o) {
      const int e = threadIdx.x + kThreads * o;
      if (e < S * hd) {
        const int j = e / hd, d = e % hd;
        for (int i = 0; i < q_count; ++i) {
          d_key[o] += d_scores[i * ldp + j] * queries[i * ldk + d];
          d_value[o] += probs[i * ldp + j] * d_outs[i * ldk + d];
        }
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int o = 0; o < kOwned; ++o) {
    const int e = threadIdx.x + kThreads * o;
    if (e < S * hd) {
      const int j = e / hd, d = e % hd;
      T* row = d_qkv + (first_token + j) * view.row_stride + head_col + d;
      row[view.model_dim] = from_float<T>(d_key[o]);
      row[2 * view.model_dim] = from_float<T>(d_value[o]);
    }
  }
}

int max_shared_bytes() {
  static const int bytes = [] {
    int device = 0, value = 0;
    DDPX_CUDA_CHECK(cudaGetDevice(&device));
    DDPX_CUDA_CHECK(cudaDeviceGetAttribute(&value, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    return value;
  }();
  return bytes;
}

template <typename Kernel, typename... Args>
void launch_with_shared(Kernel kernel, dim3 grid, int threads, size_t shared, cudaStream_t stream,
                        const AttentionShape& s, const char* name, Args... args) {
  DDPX_REQUIRE(shared <= static_cast<size_t>(max_shared_bytes()),
               "{}: sequence {} x head_dim {} needs {} bytes of shared memory, this GPU allows {}; use a larger "
               "patch size (shorter sequence)",
               name, s.seq, s.head_dim, shared, max_shared_bytes());
  DDPX_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(shared)));
  kernel<<<grid, threads, shared, stream>>>(args...);
  DDPX_CHECK_LAUNCH(name);
}

void check_shape(const AttentionShape& s, const char* what) {
  DDPX_REQUIRE(s.batch > 0 && s.seq > 0 && s.heads > 0 && s.head_dim > 0, "{}: empty shape (batch {}, seq {}, "
               "heads {}, head_dim {})", what, s.batch, s.seq, s.heads, s.head_dim);
  DDPX_REQUIRE(s.head_dim <= 128, "{}: head_dim {} is above the supported 128", what, s.head_dim);
  DDPX_REQUIRE(s.seq * s.head_dim <= 512 * 64, "{}: seq {} x head_dim {} is above the supported 32768", what, s.seq,
               s.head_dim);
}

}  // namespace

template <typename T>
void attention_forward(const AttentionShape& s, const T* qkv, T* out, float* lse, cudaStream_t stream) {
  check_shape(s, "attention_forward");
  const int64_t ldk = s.head_dim + 1;
  const size_t shared = sizeof(float) * static_cast<size_t>(2 * s.seq * ldk + kForwardQueryTile * ldk +
                                                            kForwardQueryTile * s.seq);
  dim3 grid(static_cast<unsigned>(s.batch * s.heads),
            static_cast<unsigned>((s.seq + kForwardQueryTile - 1) / kForwardQueryTile));
  if (s.head_dim <= 32)
    launch_with_shared(attention_forward_kernel<T, 1>, grid, kForwardThreads, shared, stream, s,
                       "attention_forward_kernel", s, qkv, out, lse);
  else if (s.head_dim <= 64)
    launch_with_shared(attention_forward_kernel<T, 2>, grid, kForwardThreads, shared, stream, s,
                       "attention_forward_kernel", s, qkv, out, lse);
  else
    launch_with_shared(attention_forward_kernel<T, 4>, grid, kForwardThreads, shared, stream, s,
                       "attention_forward_kernel", s, qkv, out, lse);
}

template <typename T>
void attention_backward(const AttentionShape& s, const T* qkv, const T* out, const float* lse, const T* d_out,
                        T* d_qkv, cudaStream_t stream) {
  check_shape(s, "attention_backward");
  const int64_t ldk = s.head_dim + 1, ldp = s.seq + 1;
  const size_t shared =
      sizeof(float) * static_cast<size_t>(2 * s.seq * ldk + 2 * kBackwardQueryTile * ldk +
                                          2 * kBackwardQueryTile * ldp + 2 * kBackwardQueryTile);
  dim3 grid(static_cast<unsigned>(s.batch * s.heads));
  const int64_t owned = s.seq * s.head_dim;
  if (owned <= 256 * 16)
    launch_with_shared(attention_backward_kernel<T, 256, 16>, grid, 256, shared, stream, s,
                       "attention_backward_kernel", s, qkv, out, lse, d_out, d_qkv);
  else if (owned <= 512 * 32)
    launch_with_shared(attention_backward_kernel<T, 512, 32>, grid, 512, shared, stream, s,
                       "attention_backward_kernel", s, qkv, out, lse, d_out, d_qkv);
  else
    launch_with_shared(attention_backward_kernel<T, 512, 64>, grid, 512, shared, stream, s,
                       "attention_backward_kernel", s, qkv, out, lse, d_out, d_qkv);
}

template void attention_forward<float>(const AttentionShape&, const float*, float*, float*, cudaStream_t);
template void attention_forward<__nv_bfloat16>(const AttentionShape&, const __nv_bfloat16*, __nv_bfloat16*, float*,
                                               cudaStream_t);
template void attention_backward<float>(const AttentionShape&, const float*, const float*, const float*,
                                        const float*, float*, cudaStream_t);
template void attention_backward<__nv_bfloat16>(const AttentionShape&, const __nv_bfloat16*, const __nv_bfloat16*,
                                                const float*, const __nv_bfloat16*, __nv_bfloat16*, cudaStream_t);

}  // namespace ddpx
