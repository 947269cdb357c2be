// The block shapes of the bf16 tensor-core attention kernels and the memory they take: warps per block, the
// matrices a backward block stages, and the shared-memory and scratch bytes of a shape. The kernels lay out their
// shared memory by these same functions and the launchers and attention_tensor_core_supported size it by them, so
// the two cannot disagree.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/attention_shape.hpp"
#include "kernels/attention_common.cuh"

namespace ddpx::attention_mma {

using attention_common::round_up;

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
constexpr int kKeyChunk = 64;  // forward: keys per online-softmax step

inline size_t forward_shared_bytes(const AttentionShape& s) {
  const int ld = static_cast<int>(s.head_dim) + 8;
  return sizeof(__nv_bfloat16) * static_cast<size_t>(2 * round_up(static_cast<int>(s.seq), kKeyChunk)) * ld;
}

// Bytes of phase 0's dS tiles (Note [dS kept for dQ], attention_tensor_core_backward.cu): 512 per 16 x 16 tile,
// every (image, head); 0 up to 64 tokens.
inline size_t backward_ds_bytes(const AttentionShape& s) {
  if (backward_shared_matrices(backward_warps(s.seq)) == 4) return 0;
  const auto tiles = static_cast<size_t>(round_up(static_cast<int>(s.seq), 16) / 16);
  return static_cast<size_t>(s.batch * s.heads) * tiles * tiles * 32 * sizeof(uint4);
}

inline size_t backward_shared_bytes(const AttentionShape& s) {
  const int ld = static_cast<int>(s.head_dim) + 8, s16 = round_up(static_cast<int>(s.seq), 16);
  const int matrices = backward_shared_matrices(backward_warps(s.seq));
  return sizeof(__nv_bfloat16) * static_cast<size_t>(matrices * s16 * ld) +
         sizeof(float) * static_cast<size_t>(2 * s16 + backward_warps(s.seq) * 3 * s.head_dim);
}

}  // namespace ddpx::attention_mma
