// Fused optimizer updates over the flat fp32 parameter buffer: SGD (momentum, dampening, weight decay, Nesterov)
// and AdamW, exactly torch.optim's formulas (see src/optim/sgd.hpp, adamw.hpp for the CPU twins), plus the
// fp32 -> bf16 cast that keeps the low-precision weight copy in step.
// Guarantees: one pass over the buffers per step (16-byte vector access, n a multiple of 4); when `low_copy` is not
// nullptr the updated parameter is also written there as bf16 in the same kernel. Step-dependent scalars (first
// step, bias corrections) are kernel arguments: a CUDA graph that captures an update replays those values.
// Buffers must not alias. One kernel per call on `stream`, nothing allocated.
// Gradients are read from `grads` (fp32) or from where the update's `reduced` (core/reduced_gradients.hpp) says:
// from a 16-bit buffer that holds the averaged gradients as a cast hook left them on the wire (Note [Widening fused
// into the update], ddp/comm_hook.hpp): each value is widened exactly in registers, so the update equals the one
// over the widened fp32 buffer bit for bit, and `grads` is not read; or, when `reduced.low_rank` is set, from a
// PowerSGD bucket's factors (Note [Low-rank gradients fused into the update], ddp/comm_hook.hpp): a factor piece's
// gradient is low_rank_product of its P and Q rows (core/low_rank.hpp), the value the hook would have written, and
// a plain piece's is read from `grads`; the update again equals the one over the written buffer bit for bit; or,
// when `reduced.packed_bf16` is set, from `grads` itself, where some regions hold bf16 values in the first half of
// their fp32 slots (Note [bf16 weight gradients in their fp32 slots], model_cuda/cuda_model.hpp): each is widened
// exactly, so the update equals the one over a buffer holding the widened values.
// SgdUpdate and AdamWUpdate are the kernels' argument ABI, not a second spelling of the optimizer: the trainer's
// CudaModel fills them in one place (model_cuda/cuda_model.cpp optimizer_span) from optim/'s per-step scalars.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/reduced_gradients.hpp"

namespace ddpx {

// nonfinite_gradient (device, optional): the kernel lowers it (atomicMin) to the offset of any gradient that is
// Inf or NaN, in the same pass (kernels/numerics_check.hpp); the common all-finite case issues no atomics.
struct SgdUpdate {
  float lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
  bool first_step = true;  // momentum buffer := gradient (torch's first step) instead of the running update
  // Set: the rate is read from this device float instead of `lr`, so a replayed graph follows a schedule
  // (Note [The learning rate on the device], kernels/recipe.hpp). nullptr (the default): `lr`.
  const float* lr_on_device = nullptr;
  unsigned long long* nonfinite_gradient = nullptr;
  uint64_t offset_base = 0;  // added to the offsets reported there (an update of a span of the buffer)
  ReducedGradients reduced;  // not in_buffer(): gradients from there instead of (or beside) `grads`
};

struct AdamWUpdate {
  float lr = 0, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0;
  float bias_correction1 = 1, bias_correction2_sqrt = 1;  // 1 - beta1^step, sqrt(1 - beta2^step)
  unsigned long long* nonfinite_gradient = nullptr;
  uint64_t offset_base = 0;  // added to the offsets reported there (an update of a span of the buffer)
  ReducedGradients reduced;  // not in_buffer(): gradients from there instead of (or beside) `grads`
};

// momentum_buffer may be nullptr only when update.momentum == 0; grads may be nullptr when update.reduced.data is set.
void sgd_update(float* params, const float* grads, float* momentum_buffer, __nv_bfloat16* low_copy, int64_t n,
                const SgdUpdate& update, cudaStream_t stream);

void adamw_update(float* params, const float* grads, float* exp_avg, float* exp_avg_sq, __nv_bfloat16* low_copy,
                  int64_t n, const AdamWUpdate& update, cudaStream_t stream);

// out = bf16(in), round to nearest even.
void cast_to_bf16(const float* in, __nv_bfloat16* out, int64_t n, cudaStream_t stream);

}  // namespace ddpx
