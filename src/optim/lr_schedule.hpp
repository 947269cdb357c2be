// LrSchedule: the learning rate as a function of the optimizer step, with torch.optim.lr_scheduler's semantics.
// A run with a schedule computes what this PyTorch loop computes (one scheduler.step() after each optimizer.step(),
// so step s uses the rate after s - 1 scheduler steps; with --lr-step-unit epoch one scheduler.step() after each
// epoch, as torchvision's references/classification/train.py, and every count below is in epochs):
//   warm-up W > 0:  SequentialLR([LinearLR(start_factor=F, end_factor=1, total_iters=W), MAIN], milestones=[W]),
//                   or ConstantLR(factor=F, total_iters=W) in LinearLR's place (--lr-warmup-method constant)
//   MAIN, over the T = steps - W steps after the warm-up (base rate L = --lr, m = --min-lr):
//     constant:        ConstantLR(factor=1)                       L
//     cosine:          CosineAnnealingLR(T_max=T, eta_min=m)      m + (L - m)(1 + cos(pi k / T)) / 2
//     linear:          LinearLR(1, m / L, total_iters=T)          L + (m - L) k / T
//     step:E[:G]:      StepLR(step_size=E, gamma=G)               L G^floor(k / E)
//     exponential:G:   ExponentialLR(gamma=G)                     L G^k
//   with k = e - W the scheduler steps since the warm-up ended, e = s - 1 (per epoch: the epoch of step s's first
//   micro-batch), and during the warm-up L (F + (1 - F) e / W) (constant: L F). torch 1.13's SequentialLR steps
//   MAIN with step(0) at the milestone, its closed form: the first rate after the warm-up is L.
// Guarantees: rate_at() is the closed form, evaluated in double from the typed decimals of the rates (so it equals
// torch's chained float64 recurrences to ~1e-15 relative: tests/optim/test_lr_schedule.cpp against fixtures of
// tools/make_recipe_fixtures.py at every step); parse_lr_schedule() and validate() throw ddpx::Error naming the flag
// (--lr-schedule, --lr-warmup-steps, --lr-warmup-start, --min-lr) and the value; the fixtures of
// tools/make_tv_recipe_fixtures.py (train.py's construction and stepping, per epoch and per step, linear and
// constant warm-up, cosine, step and exponential) hold tests/optim/test_tv_schedules.cpp to the same bound. The rate is finite and >= 0 for every
// step of a validated schedule. On CUDA the rate is a device value a replayed step graph reads (Note [The learning
// rate on the device], kernels/lr_schedule.hpp).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "core/lr_formula.hpp"

namespace ddpx {

enum class LrScheduleKind { constant, cosine, linear, step, exponential };
enum class LrWarmupMethod { linear, constant };  // --lr-warmup-method: LinearLR or ConstantLR
enum class LrStepUnit { step, epoch };            // --lr-step-unit: scheduler.step() per optimizer step or per epoch

struct LrSchedule {
  LrScheduleKind kind = LrScheduleKind::constant;
  // warmup_steps, step_every and total_steps count scheduler steps: optimizer steps, or epochs under unit epoch.
  int64_t warmup_steps = 0;           // --lr-warmup-steps (0: none), or --lr-warmup-epochs resolved by the run plan
  double warmup_start_factor = 0.01;  // --lr-warmup-start: the first step's rate is this x --lr (torchvision's 0.01)
  LrWarmupMethod warmup_method = LrWarmupMethod::linear;
  double min_lr = 0;                  // --min-lr: cosine's eta_min, linear's last rate
  int64_t step_every = 0;             // step: StepLR's step_size
  double step_gamma = 0.1;            // step: StepLR's gamma; exponential: ExponentialLR's gamma
  int64_t total_steps = 0;            // the run's length (the horizon; train/run_plan.hpp); 0: not yet known
  LrStepUnit unit = LrStepUnit::step;
  // unit epoch (the run plan's): micro-batches of one optimizer step (--grad-accum) and of one epoch on each rank.
  int64_t micro_batches_per_step = 1, micro_batches_per_epoch = 0;

  // Whether the rate changes during the run (a warm-up or any schedule but constant).
  bool varies() const { return kind != LrScheduleKind::constant || warmup_steps > 0; }
  // The rate of optimizer step `step` (1-based) for base rate `base_lr` (--lr, as typed): core/lr_formula.hpp's
  // closed form, which the device form (kernels/recipe.hpp) evaluates too.
  double rate_at(double base_lr, int64_t step) const;
  // This schedule as core/lr_formula.hpp's plain struct, for the host and for a kernel's arguments.
  LrFormula formula(double base_lr) const;
  // "cosine, warm-up 100 steps from 0.01x, min 1e-05": the start-up line and the run report.
  std::string describe() const;
  // Throws ddpx::Error naming the flag: a warm-up as long as the run or longer (once total_steps is known), a non-finite or negative value,
  // --min-lr above --lr, step:0.
  void validate(double base_lr) const;
  bool operator==(const LrSchedule&) const = default;
};

// "constant" | "cosine" | "linear" | "step:EVERY[:GAMMA]" | "exponential:GAMMA" (--lr-schedule); the other fields
// keep their defaults.
LrSchedule parse_lr_schedule(std::string_view text);
std::string_view lr_schedule_name(LrScheduleKind kind);
// "linear" | "constant" (--lr-warmup-method); "step" | "epoch" (--lr-step-unit). Throw ddpx::Error naming the flag.
LrWarmupMethod parse_lr_warmup_method(std::string_view text);
LrStepUnit parse_lr_step_unit(std::string_view text);
std::string_view lr_warmup_method_name(LrWarmupMethod method);
std::string_view lr_step_unit_name(LrStepUnit unit);

}  // namespace ddpx
