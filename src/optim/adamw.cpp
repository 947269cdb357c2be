// Fused AdamW step (see adamw.hpp for the update). The float operation order follows torch's CPU kernels
// (lerp_, mul_/addcmul_, sqrt/div/add, addcdiv_) so results agree to the last few ulps.
#include "optim/adamw.hpp"

#include <cmath>

#include "core/error.hpp"
#include "optim/hyperparameter.hpp"

namespace ddpx {

void validate(const AdamWOptions& options) {
  DDPX_REQUIRE(std::isfinite(options.lr) && options.lr >= 0.f, "--lr must be a finite number >= 0, got {}",
               options.lr);
  DDPX_REQUIRE(options.beta1 >= 0.f && options.beta1 < 1.f, "--beta1 must be in [0, 1), got {}", options.beta1);
  DDPX_REQUIRE(options.beta2 >= 0.f && options.beta2 < 1.f, "--beta2 must be in [0, 1), got {}", options.beta2);
  DDPX_REQUIRE(std::isfinite(options.eps) && options.eps >= 0.f, "--eps must be a finite number >= 0, got {}",
               options.eps);
  DDPX_REQUIRE(std::isfinite(options.weight_decay) && options.weight_decay >= 0.f,
               "--weight-decay must be a finite number >= 0, got {}", options.weight_decay);
}

AdamWStepScalars adamw_step_scalars(const AdamWOptions& options, int64_t step) {
  DDPX_REQUIRE(step >= 1, "AdamW: step must start at 1, got {}", step);
  const double lr = typed_decimal(options.lr), beta1 = typed_decimal(options.beta1);
  const double beta2 = typed_decimal(options.beta2), weight_decay = typed_decimal(options.weight_decay);
  const double bias_correction1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  const double bias_correction2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  return {.decay = static_cast<float>(1.0 - lr * weight_decay),
          .average_weight = static_cast<float>(1.0 - beta1),
          .beta2 = static_cast<float>(beta2),
          .square_weight = static_cast<float>(1.0 - beta2),
          .neg_step_size = static_cast<float>(-(lr / bias_correction1)),
          .bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2)),
          .eps = options.eps};
}

void adamw_step_cpu(const AdamWOptions& options, float* params, const float* grads, float* exp_avg,
                    float* exp_avg_sq, size_t n, int64_t step) {
  const AdamWStepScalars s = adamw_step_scalars(options, step);
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
