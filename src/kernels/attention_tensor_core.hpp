// Tensor-core (mma.sync m16n8k16 bf16) attention for bf16 storage: the fast path behind attention_forward /
// attention_backward (attention.hpp) for the shapes attention_tensor_core_supported() accepts. Same contract as
// attention.hpp (outputs, lse in natural-log units, no atomics, bit-identical run to run); P and dS are rounded
// to bf16 as matmul operands, accumulation is fp32. Internal to src/kernels: callers use attention.hpp.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/attention_shape.hpp"

namespace ddpx {

// head_dim 32, 64 or 80, the whole head (sequence rounded up to 16 or 64) fitting in shared memory, and the
// tensors 16-byte aligned.
bool attention_tensor_core_supported(const AttentionShape& shape, const void* qkv, const void* out,
                                     const void* d_out, const void* d_qkv);

void attention_forward_tensor_core(const AttentionShape& shape, const __nv_bfloat16* qkv, __nv_bfloat16* out,
                                   float* lse, cudaStream_t stream);

// Scratch the backward needs (past 64 tokens phase 0's dS tiles, Note [dS kept for dQ]; else 0).
size_t attention_backward_tensor_core_scratch_bytes(const AttentionShape& shape);

// d_bias_per_image may be nullptr; else it receives [batch, 3 * heads * head_dim] column sums of d_qkv per image.
void attention_backward_tensor_core(const AttentionShape& shape, const __nv_bfloat16* qkv,
                                    const __nv_bfloat16* out, const float* lse, const __nv_bfloat16* d_out,
                                    __nv_bfloat16* d_qkv, float* d_bias_per_image, void* scratch,
                                    size_t scratch_bytes, cudaStream_t stream);

}  // namespace ddpx
