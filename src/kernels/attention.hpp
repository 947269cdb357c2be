// Fused multi-head self-attention for short sequences (ViT: 50 tokens at /32, 197 at /16), forward and backward.
// Guarantees:
//  - qkv is [batch*seq, 3*heads*head_dim] row-major, each row q | k | v with heads concatenated (torchvision's
//    packed in_proj order); out / d_out are [batch*seq, heads*head_dim]. softmax(q k^T * scale) v per (image,
//    head); fp32 arithmetic whatever the storage type T.
//  - Forward writes out and the per-query log-sum-exp lse [batch, heads, seq] (fp32), which is all the backward
//    needs besides qkv and out: probabilities are recomputed, never stored.
//  - Backward writes (not adds) d_qkv in the qkv layout and, when d_bias_per_image is not null, the column sums
//    of d_qkv per image [batch, 3*heads*head_dim] (fp32; summed over images they are the in_proj bias gradient).
//    No atomics: bit-identical run to run.
//  - bf16 storage with head_dim 32/64/80 (and 16-byte aligned tensors) runs on tensor cores
//    (attention_tensor_core.hpp: P and dS rounded to bf16 as matmul operands); so does fp32 storage with
//    shape.tf32 set where attention_tf32.hpp takes the shape (operands rounded to TF32); everything else runs the
//    fp32 CUDA-core kernels.
//  - The backward takes scratch from the caller: attention_backward_scratch_bytes(shape) bytes, 16-byte aligned
//    (ViT-B/16 at batch 256: 266 MB of dS tiles, Note [dS kept for dQ] in attention_tensor_core_backward.cu; 0 for most
//    shapes, nullptr then allowed); too little is an error naming the size needed.
//  - One kernel each (two for the CUDA-core backward with bias sums), enqueued on `stream`; nothing allocated. Limits (checked, error names the shape):
//    head_dim <= 128, seq * head_dim <= 32768, and the shared memory the sequence needs must fit the GPU.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/attention_shape.hpp"

namespace ddpx {

template <typename T>
void attention_forward(const AttentionShape& shape, const T* qkv, T* out, float* lse, cudaStream_t stream);

template <typename T>
size_t attention_backward_scratch_bytes(const AttentionShape& shape);

template <typename T>
void attention_backward(const AttentionShape& shape, const T* qkv, const T* out, const float* lse, const T* d_out,
                        T* d_qkv, float* d_bias_per_image, void* scratch, size_t scratch_bytes,
                        cudaStream_t stream);

}  // namespace ddpx
