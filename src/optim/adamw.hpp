// AdamW (decoupled weight decay) exactly as torch.optim.AdamW (amsgrad=False, maximize=False) defines it, as one
// fused loop over flat fp32 buffers. Guarantees: the bias corrections use `step` (1 on the first call), computed
// in double from the typed decimals like torch's Python scalars (adamw_step_scalars, the one place both engines
// take them from); padding elements whose grad, param and moments are zero stay zero.
// Runs on the calling thread; buffers must not alias.
#pragma once
#include <cstddef>
#include <cstdint>

#include "optim/optimizer_spec.hpp"

namespace ddpx {

// The fp32 scalars of step `step` (1 on the first call), derived in double from the spec read as typed decimals
// (optim/hyperparameter.hpp), exactly as torch derives them from Python floats. The CUDA kernel's AdamWUpdate
// (kernels/optimizer.hpp) takes its bias corrections from here too, so the CPU and GPU updates agree.
struct AdamWStepScalars {
  float lr;                     // spec.lr_at(step)
  float decay;                  // 1 - lr * weight_decay
  float average_weight;         // 1 - beta1, the lerp weight of exp_avg
  float beta2;                  // exp_avg_sq decay
  float square_weight;          // 1 - beta2
  float bias_correction1;       // 1 - beta1^step
  float neg_step_size;          // -lr / (1 - beta1^step)
  float bias_correction2_sqrt;  // sqrt(1 - beta2^step)
  float eps;
};
AdamWStepScalars adamw_step_scalars(const OptimizerSpec& spec, int64_t step);

// One step over n elements; step is 1 on the first call.
//   param *= 1 - lr * weight_decay
//   exp_avg = lerp(exp_avg, grad, 1 - beta1);  exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * grad^2
//   param -= lr / (1 - beta1^step) * exp_avg / (sqrt(exp_avg_sq) / sqrt(1 - beta2^step) + eps)
void adamw_step_cpu(const OptimizerSpec& spec, float* params, const float* grads, float* exp_avg,
                    float* exp_avg_sq, size_t n, int64_t step);

}  // namespace ddpx
