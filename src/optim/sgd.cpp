// Fused SGD step (see sgd.hpp for the update and its guarantees).
#include "optim/sgd.hpp"

#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "optim/hyperparameter.hpp"

namespace ddpx {

SgdStepScalars sgd_step_scalars(const OptimizerSpec& spec, int64_t step) {
  DDPX_INTERNAL_ASSERT(spec.kind == OptimizerKind::sgd, "SGD scalars of an --optimizer {} spec", spec.name());
  DDPX_REQUIRE(step >= 1, "SGD: step must start at 1, got {}", step);
  return {.lr = spec.lr_at(step),
          .momentum = spec.momentum,
          .dampening = spec.dampening,
          .grad_scale = static_cast<float>(1.0 - typed_decimal(spec.dampening)),
          .weight_decay = spec.weight_decay,
          .nesterov = spec.nesterov,
          .first_step = step == 1};
}

void sgd_step_cpu(const OptimizerSpec& spec, float* params, const float* grads, float* momentum, size_t n,
                  int64_t step) {
  const SgdStepScalars s = sgd_step_scalars(spec, step);
  DDPX_REQUIRE(s.momentum == 0.f || momentum != nullptr || n == 0,
               "sgd_step_cpu: momentum {} needs a momentum buffer", s.momentum);
  const float lr = s.lr, beta = s.momentum, weight_decay = s.weight_decay, grad_scale = s.grad_scale;
  const bool first_step = s.first_step, nesterov = s.nesterov;
  for (size_t i = 0; i < n; ++i) {
    float g = grads[i];
    if (weight_decay != 0.f) g = g + weight_decay * params[i];
    if (beta != 0.f) {
      const float buffer = first_step ? g : momentum[i] * beta + grad_scale * g;
      momentum[i] = buffer;
      g = nesterov ? g + beta * buffer : buffer;
    }
    params[i] = params[i] - lr * g;
  }
}

}  // namespace ddpx
