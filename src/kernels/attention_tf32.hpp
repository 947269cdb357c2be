// TF32 tensor-core (mma.sync m16n8k8) attention for fp32 storage: the fast path behind attention_forward<float> /
// attention_backward<float> when the caller allows TF32 products (AttentionShape::tf32, set by the tf32 precision)
// and attention_tf32_supported() accepts the shape. Same contract as attention.hpp (outputs, lse in natural-log
// units, no atomics, bit-identical run to run); q, k, v, dO and the recomputed P and dS are rounded to TF32 (10-bit
// mantissa, round to nearest) as matmul operands, as cuBLASLt's TF32 mode rounds the model's other products; the
// softmax, rowsum(dO * O) and every accumulation stay fp32. Internal to src/kernels: callers use attention.hpp.
#pragma once
#include <cuda_runtime.h>

#include "kernels/attention_shape.hpp"

namespace ddpx {

// shape.tf32, head_dim 32, 64 or 80, the head's four matrices (sequence rounded up to 16) fitting in shared
// memory (ViT-*/32's 50 tokens: yes; ViT-B/16's 197: no, it keeps the CUDA-core kernels), tensors 16-byte aligned.
bool attention_tf32_supported(const AttentionShape& shape, const void* qkv, const void* out, const void* d_out,
                              const void* d_qkv);

void attention_forward_tf32(const AttentionShape& shape, const float* qkv, float* out, float* lse,
                            cudaStream_t stream);

// d_bias_per_image may be nullptr; else it receives [batch, 3 * heads * head_dim] column sums of d_qkv per image.
void attention_backward_tf32(const AttentionShape& shape, const float* qkv, const float* out, const float* lse,
                             const float* d_out, float* d_qkv, float* d_bias_per_image, cudaStream_t stream);

}  // namespace ddpx
