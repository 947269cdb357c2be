// The ViT input stage around the patch-embedding matmul: image -> patch rows, patch embeddings -> token rows
// (class token + position embedding), and the backward gather of the patch tokens' gradients.
// Guarantees:
//  - patchify: patches[b*N + py*G + px][(c*P + ky)*P + kx] = image[b][c][py*P + ky][px*P + kx] (G = image/P patches
//    per side, N = G*G), the order of conv_proj.weight [D, C, P, P], so the conv is patches @ weight^T + bias.
//  - assemble_tokens: tokens[b*S + 0] = class_token + pos[0]; tokens[b*S + 1 + n] = patch_embed[b*N + n] + pos[1+n]
//    (S = N + 1; all fp32: the residual stream).
//  - gather_patch_token_grads: d_patch_embed[b*N + n] = d_tokens[b*S + 1 + n], converted to T.
//  - One kernel per call on `stream`; nothing allocated.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace ddpx {

struct PatchShape {
  int64_t batch = 0, channels = 0, image_size = 0, patch_size = 0;
  constexpr int64_t per_side() const { return image_size / patch_size; }
  constexpr int64_t num_patches() const { return per_side() * per_side(); }
  constexpr int64_t patch_dim() const { return channels * patch_size * patch_size; }
};

template <typename T>
void patchify(const float* images, T* patches, const PatchShape& shape, cudaStream_t stream);

void assemble_tokens(const float* patch_embed, const float* class_token, const float* pos_embedding, float* tokens,
                     int64_t batch, int64_t num_patches, int64_t dim, cudaStream_t stream);

template <typename T>
void gather_patch_token_grads(const float* d_tokens, T* d_patch_embed, int64_t batch, int64_t num_patches,
                              int64_t dim, cudaStream_t stream);

}  // namespace ddpx
