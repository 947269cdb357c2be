// Patch-embedding stage kernels; see patch_embedding.hpp. Thread per output element (grid-stride); consecutive
// threads take consecutive kx / columns, so both the image reads and the row writes are coalesced.
#include <cuda_bf16.h>

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "core/kernel_launch.cuh"
#include "kernels/device_utils.cuh"
#include "kernels/patch_embedding.hpp"

namespace ddpx {
namespace {

using kernels::from_float;

constexpr int kThreads = 256;

template <typename T>
__global__ void patchify_kernel(const float* images, T* patches, PatchShape s, int64_t total) {
  begin_after_producer();
  const int64_t P = s.patch_size, G = s.per_side(), N = G * G, K = s.patch_dim(), H = s.image_size;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = e / K, col = e % K;
    const int64_t b = row / N, patch = row % N, py = patch / G, px = patch % G;
    const int64_t c = col / (P * P), ky = (col / P) % P, kx = col % P;
    patches[e] = from_float<T>(images[((b * s.channels + c) * H + py * P + ky) * H + px * P + kx]);
  }
}

__global__ void assemble_tokens_kernel(const float* patch_embed, const float* class_token, const float* pos,
                                       float* tokens, int64_t num_patches, int64_t dim, int64_t total) {
  begin_after_producer();
  const int64_t S = num_patches + 1;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t token = e / dim, d = e % dim, b = token / S, s = token % S;
    const float value = s == 0 ? class_token[d] : patch_embed[(b * num_patches + s - 1) * dim + d];
    tokens[e] = value + pos[s * dim + d];
  }
}

template <typename T>
__global__ void gather_kernel(const float* d_tokens, T* d_patch_embed, int64_t num_patches, int64_t dim,
                              int64_t total) {
  begin_after_producer();
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = e / dim, d = e % dim, b = row / num_patches, n = row % num_patches;
    d_patch_embed[e] = from_float<T>(d_tokens[(b * (num_patches + 1) + 1 + n) * dim + d]);
  }
}

}  // namespace

template <typename T>
void patchify(const float* images, T* patches, const PatchShape& s, cudaStream_t stream) {
  DDPX_REQUIRE(s.patch_size > 0 && s.image_size % s.patch_size == 0,
               "patchify: image size {} is not divisible by patch size {}", s.image_size, s.patch_size);
  const int64_t total = s.batch * s.num_patches() * s.patch_dim();
  if (total == 0) return;
  launch_after_producer("patchify_kernel", patchify_kernel<T>, kernels::elementwise_blocks(total, kThreads), kThreads,
                        0, stream, images, patches, s, total);
}

void assemble_tokens(const float* patch_embed, const float* class_token, const float* pos_embedding, float* tokens,
                     int64_t batch, int64_t num_patches, int64_t dim, cudaStream_t stream) {
  const int64_t total = batch * (num_patches + 1) * dim;
  if (total == 0) return;
  launch_after_producer("assemble_tokens_kernel", assemble_tokens_kernel, kernels::elementwise_blocks(total, kThreads),
                        kThreads, 0, stream, patch_embed, class_token, pos_embedding, tokens, num_patches, dim, total);
}

template <typename T>
void gather_patch_token_grads(const float* d_tokens, T* d_patch_embed, int64_t batch, int64_t num_patches,
                              int64_t dim, cudaStream_t stream) {
  const int64_t total = batch * num_patches * dim;
  if (total == 0) return;
  launch_after_producer("gather_kernel", gather_kernel<T>, kernels::elementwise_blocks(total, kThreads), kThreads, 0,
                        stream, d_tokens, d_patch_embed, num_patches, dim, total);
}

template void patchify<float>(const float*, float*, const PatchShape&, cudaStream_t);
template void patchify<__nv_bfloat16>(const float*, __nv_bfloat16*, const PatchShape&, cudaStream_t);
template void gather_patch_token_grads<float>(const float*, float*, int64_t, int64_t, int64_t, cudaStream_t);
template void gather_patch_token_grads<__nv_bfloat16>(const float*, __nv_bfloat16*, int64_t, int64_t, int64_t,
                                                      cudaStream_t);

}  // namespace ddpx
