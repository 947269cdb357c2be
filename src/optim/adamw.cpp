// Fused AdamW step (see adamw.hpp for the update). The float operation order follows torch's CPU kernels
// (lerp_, mul_/addcmul_, sqrt/div/add, addcdiv_) so results agree to the last few ulps.
#include "optim/adamw.hpp"

#include <cmath>

#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "optim/hyperparameter.hpp"

namespace ddpx {

AdamWStepScalars adamw_step_scalars(const OptimizerSpec& spec, int64_t step) {
  DDPX_INTERNAL_ASSERT(spec.kind == OptimizerKind::adamw, "AdamW scalars of an --optimizer {} spec", spec.name());
  DDPX_REQUIRE(step >= 1, "AdamW: step must start at 1, got {}", step);
  const float lr_now = spec.lr_at(step);
  const double lr = typed_decimal(lr_now), beta1 = typed_decimal(spec.beta1);
  const double beta2 = typed_decimal(spec.beta2), weight_decay = typed_decimal(spec.weight_decay);
  const double bias_correction1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  const double bias_correction2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  return {.lr = lr_now,
          .decay = static_cast<float>(1.0 - lr * weight_decay),
          .average_weight = static_cast<float>(1.0 - beta1),
          .beta2 = static_cast<float>(beta2),
          .square_weight = static_cast<float>(1.0 - beta2),
          .bias_correction1 = static_cast<float>(bias_correction1),
          .neg_step_size = static_cast<float>(-(lr / bias_correction1)),
          .bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2)),
          .eps = spec.eps};
}

void adamw_step_cpu(const OptimizerSpec& spec, float* params, const float* grads, float* exp_avg,
                    float* exp_avg_sq, size_t n, int64_t step) {
  const AdamWStepScalars s = adamw_step_scalars(spec, step);
  const bool small_weight = s.average_weight < 0.5f;  // torch's lerp picks its formula by the weight
  for (size_t i = 0; i < n; ++i) {
    const float g = grads[i];
    const float p = params[i] * s.decay;
    const float m = small_weight ? exp_avg[i] + s.average_weight * (g - exp_avg[i])
                                 : g - (g - exp_avg[i]) * (1.f - s.average_weight);
    const float v = exp_avg_sq[i] * s.beta2 + s.square_weight * g * g;
    const float denom = std::sqrt(v) / s.bias_correction2_sqrt + s.eps;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    params[i] = p + s.neg_step_size * m / denom;
  }
}

}  // namespace ddpx
