// LrSchedule: the learning rate as a function of the optimizer step, with torch.optim.lr_scheduler's semantics.
// A run with a schedule computes what this PyTorch loop computes (one scheduler.step() after each optimizer.step(),
// so step s uses the rate after s - 1 scheduler steps):
//   warm-up W > 0:  SequentialLR([LinearLR(start_factor=F, end_factor=1, total_iters=W), MAIN], milestones=[W])
//   MAIN, over the T = steps - W steps after the warm-up (base rate L = --lr, m = --min-lr):
//     constant:        ConstantLR(factor=1)                       L
//     cosine:          CosineAnnealingLR(T_max=T, eta_min=m)      m + (L - m)(1 + cos(pi k / T)) / 2
//     linear:          LinearLR(1, m / L, total_iters=T)          L + (m - L) k / T
//     step:E[:G]:      StepLR(step_size=E, gamma=G)               L G^floor(k / E)
//   with k = s - 1 - W the steps since the warm-up ended (and during it L (F + (1 - F)(s - 1) / W)).
// Guarantees: rate_at() is the closed form, evaluated in double from the typed decimals of the rates (so it equals
// torch's chained float64 recurrences to ~1e-15 relative: tests/optim/test_lr_schedule.cpp against fixtures of
// tools/make_recipe_fixtures.py at every step); parse_lr_schedule() and validate() throw ddpx::Error naming the flag
// (--lr-schedule, --lr-warmup-steps, --lr-warmup-start, --min-lr) and the value. The rate is finite and >= 0 for every
// step of a validated schedule. On CUDA the rate is a device value a replayed step graph reads (Note [The learning
// rate on the device], kernels/lr_schedule.hpp).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "core/lr_formula.hpp"

namespace ddpx {

enum class LrScheduleKind { constant, cosine, linear, step };

struct LrSchedule {
  LrScheduleKind kind = LrScheduleKind::constant;
  int64_t warmup_steps = 0;           // --lr-warmup-steps (0: none)
  double warmup_start_factor = 0.01;  // --lr-warmup-start: the first step's rate is this x --lr (torchvision's 0.01)
  double min_lr = 0;                  // --min-lr: cosine's eta_min, linear's last rate
  int64_t step_every = 0;             // step: StepLR's step_size
  double step_gamma = 0.1;            // step: StepLR's gamma
  int64_t total_steps = 0;            // the run's length in steps (the horizon; train/run_plan.hpp); 0: not yet known

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

// "constant" | "cosine" | "linear" | "step:EVERY[:GAMMA]" (--lr-schedule); the other fields keep their defaults.
LrSchedule parse_lr_schedule(std::string_view text);
std::string_view lr_schedule_name(LrScheduleKind kind);

}  // namespace ddpx
