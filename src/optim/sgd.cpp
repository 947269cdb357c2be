// Fused SGD step (see sgd.hpp for the update and its guarantees).
#include "optim/sgd.hpp"

#include <cmath>

#include "core/error.hpp"
#include "optim/hyperparameter.hpp"

namespace ddpx {

void validate(const SgdOptions& options) {
  DDPX_REQUIRE(std::isfinite(options.lr) && options.lr >= 0.f, "--lr must be a finite number >= 0, got {}",
               options.lr);
  DDPX_REQUIRE(options.momentum >= 0.f && options.momentum < 1.f, "--momentum must be in [0, 1), got {}",
               options.momentum);
  DDPX_REQUIRE(options.dampening >= 0.f && options.dampening <= 1.f, "--dampening must be in [0, 1], got {}",
               options.dampening);
  DDPX_REQUIRE(std::isfinite(options.weight_decay) && options.weight_decay >= 0.f,
               "--weight-decay must be a finite number >= 0, got {}", options.weight_decay);
  DDPX_REQUIRE(!options.nesterov || (options.momentum > 0.f && options.dampening == 0.f),
               "--nesterov needs --momentum > 0 and --dampening 0 (got momentum {}, dampening {}); drop --nesterov "
               "or set the momentum",
               options.momentum, options.dampening);
}

void sgd_step_cpu(const SgdOptions& options, float* params, const float* grads, float* momentum, size_t n,
                  int64_t step) {
  DDPX_REQUIRE(step >= 1, "sgd_step_cpu: step must start at 1, got {}", step);
  DDPX_REQUIRE(options.momentum == 0.f || momentum != nullptr || n == 0,
               "sgd_step_cpu: momentum {} needs a momentum buffer", options.momentum);
  const float lr = options.lr, beta = options.momentum, weight_decay = options.weight_decay;
  const auto grad_scale = static_cast<float>(1.0 - typed_decimal(options.dampening));  // torch: 1 - dampening
  const bool first_step = step == 1, nesterov = options.nesterov;
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
