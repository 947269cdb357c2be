// Global-norm gradient clipping, torch.nn.utils.clip_grad_norm_'s semantics over one flat gradient buffer.
// The trainer applies it after the reduction (the averaged gradients every rank holds), so every rank computes the
// same norm and the same coefficient and the weights stay identical across ranks.
// Guarantees: global_grad_norm() is the L2 norm of the buffer accumulated in double (the padding of a FlatLayout is
// zero and adds nothing), rounded to fp32 as torch's fp32 norm is; clip_coefficient() is torch's
// min(1, max_norm / (norm + 1e-6)) in fp32; clip_grad_norm_cpu() multiplies the buffer by it (nothing when it is
// 1) and returns the norm before clipping, the figure `--clip-grad-norm` reports. A non-finite norm gives a
// non-finite coefficient, as in torch with error_if_nonfinite=False, which the numerics guard then reports.
// Checked against torch.nn.utils.clip_grad_norm_ (tests/optim/test_recipe_fixtures.cpp).
#pragma once
#include <cstddef>

namespace ddpx {

float global_grad_norm(const float* grads, size_t n);
float clip_coefficient(float norm, float max_norm);
float clip_grad_norm_cpu(float* grads, size_t n, float max_norm);
// Throws ddpx::Error naming --clip-grad-norm unless the value is finite and > 0 (0 means off and is not passed).
void validate_clip_grad_norm(double max_norm);

}  // namespace ddpx
