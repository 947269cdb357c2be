// SGD with momentum, dampening, weight decay and Nesterov, exactly as torch.optim.SGD (maximize=False) defines
// it, as one fused loop over flat fp32 buffers. Guarantees: step 1 initialises the momentum buffer to the
// (weight-decayed) gradient, like torch's first step; padding elements whose grad, param and momentum are zero
// stay zero. Runs on the calling thread; buffers must not alias.
#pragma once
#include <cstddef>
#include <cstdint>

#include "optim/optimizer_spec.hpp"

namespace ddpx {

// The fp32 scalars of SGD step `step` (1 on the first call), for both engines: the CPU loop below and the CUDA
// kernel's SgdUpdate (kernels/optimizer.hpp) are filled from these.
struct SgdStepScalars {
  float lr;            // spec.lr_at(step)
  float momentum;      // 0: no momentum buffer
  float dampening;     // as typed; the CPU loop scales the gradient by grad_scale
  float grad_scale;    // 1 - dampening, derived in double from the typed decimal (torch: 1 - dampening)
  float weight_decay;
  bool nesterov;
  bool first_step;     // step == 1: the momentum buffer becomes the gradient
};
SgdStepScalars sgd_step_scalars(const OptimizerSpec& spec, int64_t step);

// One step over n elements; step is 1 on the first call. momentum may be nullptr when spec.momentum == 0.
//   g = grad + weight_decay * param
//   buf = (step == 1) ? g : momentum * buf + (1 - dampening) * g
//   g = nesterov ? g + momentum * buf : buf          (only when momentum != 0)
//   param -= lr * g
void sgd_step_cpu(const OptimizerSpec& spec, float* params, const float* grads, float* momentum, size_t n,
                  int64_t step);

}  // namespace ddpx
