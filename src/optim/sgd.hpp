// SGD with momentum, dampening, weight decay and Nesterov, exactly as torch.optim.SGD (maximize=False) defines
// it, as one fused loop over flat fp32 buffers. Guarantees: step 1 initialises the momentum buffer to the
// (weight-decayed) gradient, like torch's first step; padding elements whose grad, param and momentum are zero
// stay zero. Runs on the calling thread; buffers must not alias.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ddpx {

struct SgdOptions {
  float lr = 0.01f, momentum = 0.9f, dampening = 0.f, weight_decay = 0.f;
  bool nesterov = false;
};

// Throws ddpx::Error naming the flag (--lr, --momentum, --dampening, --weight-decay, --nesterov) and the value.
void validate(const SgdOptions& options);

// One step over n elements; step is 1 on the first call. momentum may be nullptr when options.momentum == 0.
//   g = grad + weight_decay * param
//   buf = (step == 1) ? g : momentum * buf + (1 - dampening) * g
//   g = nesterov ? g + momentum * buf : buf          (only when momentum != 0)
//   param -= lr * g
void sgd_step_cpu(const SgdOptions& options, float* params, const float* grads, float* momentum, size_t n,
                  int64_t step);

}  // namespace ddpx
