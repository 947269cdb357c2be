// Global-norm gradient clipping (see grad_clip.hpp).
#include "optim/grad_clip.hpp"

#include <cmath>

#include "core/error.hpp"

namespace ddpx {

float global_grad_norm(const float* grads, size_t n) {
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += static_cast<double>(grads[i]) * grads[i];
  return static_cast<float>(std::sqrt(sum));
}

float clip_coefficient(float norm, float max_norm) {
  const float coefficient = max_norm / (norm + 1e-6f);
  return coefficient < 1.f ? coefficient : (std::isnan(coefficient) ? coefficient : 1.f);
}

float clip_grad_norm_cpu(float* grads, size_t n, float max_norm) {
  const float norm = global_grad_norm(grads, n);
  const float coefficient = clip_coefficient(norm, max_norm);
  if (coefficient != 1.f)
    for (size_t i = 0; i < n; ++i) grads[i] *= coefficient;
  return norm;
}

void validate_clip_grad_norm(double max_norm) {
  DDPX_REQUIRE(std::isfinite(max_norm) && max_norm > 0 && std::isfinite(static_cast<float>(max_norm)),
               "--clip-grad-norm must be a finite number > 0 (the largest global L2 norm of the averaged gradients; "
               "leave it out for no clipping), got {}", max_norm);
}

}  // namespace ddpx
