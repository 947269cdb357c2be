// The learning rate's closed form, one definition for the host and the device: optim/lr_schedule.cpp's
// LrSchedule::rate_at (every engine's rate today) and kernels/recipe.cu's advance_learning_rate (the device form for
// CUDA graphs that replay a changing rate; Note [The learning rate on the device], kernels/recipe.hpp) both call
// lr_formula_at, so the two cannot drift (issue 49: they were two copies, the device one a switch on magic ints).
// Guarantees: a plain struct and an inline function in double precision, C++17, host and device alike; step is the
// 1-based optimizer step. The schedule advances in scheduler steps: one per optimizer step (--lr-step-unit step:
// the micro-batch counts are 1), or one per epoch (--lr-step-unit epoch: the epoch of the step's first micro-batch,
// (step - 1) x micro_batches_per_step / micro_batches_per_unit, as torchvision's train.py steps its scheduler once
// per epoch). With e such scheduler steps before this optimizer step (PyTorch's count), the warm-up's W units are
// LinearLR(start_factor, 1, W) (or ConstantLR(start_factor, W)) and then, over the units left, ConstantLR-like
// (constant), CosineAnnealingLR(T_max, eta_min) (cosine), a line to min_lr (linear), StepLR(step_every, gamma)
// (step) or ExponentialLR(gamma) (exponential). warmup_steps, total_steps and step_every count scheduler steps.
#pragma once
#include <math.h>

#ifdef __CUDACC__
#define DDPX_LR_HOST_DEVICE __host__ __device__
#else
#define DDPX_LR_HOST_DEVICE
#endif

namespace ddpx {

enum class LrShape : int { constant = 0, cosine = 1, linear = 2, step = 3, exponential = 4 };

struct LrFormula {
  LrShape shape = LrShape::constant;
  long long warmup_steps = 0, step_every = 1, total_steps = 1;  // in scheduler steps
  double base_lr = 0, warmup_start_factor = 1, min_lr = 0, step_gamma = 1;  // step_gamma: StepLR's or ExponentialLR's
  bool warmup_constant = false;  // ConstantLR(factor = warmup_start_factor) instead of LinearLR
  // One scheduler step per micro_batches_per_unit micro-batches (1 and 1: per optimizer step).
  long long micro_batches_per_step = 1, micro_batches_per_unit = 1;
};

// The scheduler steps taken before optimizer step `step` (1-based).
DDPX_LR_HOST_DEVICE inline long long lr_scheduler_steps_before(const LrFormula& f, long long step) {
  return (step - 1) * f.micro_batches_per_step / f.micro_batches_per_unit;
}

DDPX_LR_HOST_DEVICE inline double lr_formula_at(const LrFormula& f, long long step) {
  const long long e = lr_scheduler_steps_before(f, step);
  if (e < f.warmup_steps) {
    if (f.warmup_constant) return f.base_lr * f.warmup_start_factor;
    const double progress = static_cast<double>(e) / static_cast<double>(f.warmup_steps);
    return f.base_lr * (f.warmup_start_factor + (1.0 - f.warmup_start_factor) * progress);
  }
  const long long k = e - f.warmup_steps;
  const long long left = f.total_steps - f.warmup_steps;
  const double horizon = static_cast<double>(left > 1 ? left : 1);
  switch (f.shape) {
    case LrShape::constant:
      return f.base_lr;
    case LrShape::cosine:
      return f.min_lr + (f.base_lr - f.min_lr) * (1.0 + ::cos(3.14159265358979323846 * static_cast<double>(k) / horizon)) / 2;
    case LrShape::linear: {
      const double progress = (static_cast<double>(k) < horizon ? static_cast<double>(k) : horizon) / horizon;
      return f.base_lr * (1.0 + (f.min_lr / f.base_lr - 1.0) * progress);
    }
    case LrShape::step:
      return f.base_lr * ::pow(f.step_gamma, static_cast<double>(k / f.step_every));
    case LrShape::exponential:
      return f.base_lr * ::pow(f.step_gamma, static_cast<double>(k));
  }
  return f.base_lr;
}

}  // namespace ddpx
