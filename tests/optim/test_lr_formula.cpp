// core/lr_formula.hpp is the one closed form of the learning rate (issue 49): LrSchedule::rate_at is exactly
// lr_formula_at of its formula(), for every schedule with and without a warm-up, and the formula's shape follows the
// schedule's kind (the device form, kernels/recipe.cu, takes the same struct; tests/kernels/test_recipe.cpp checks
// the kernel against rate_at on a GPU).
#include <gtest/gtest.h>

#include "core/lr_formula.hpp"
#include "optim/lr_schedule.hpp"

namespace ddpx {
namespace {

TEST(LrFormula, TheScheduleIsTheSharedFormulaEveryStep) {
  for (const char* text : {"constant", "cosine", "linear", "step:7:0.5"}) {
    for (const int64_t warmup : {int64_t{0}, int64_t{9}}) {
      LrSchedule s = parse_lr_schedule(text);
      s.total_steps = 60, s.warmup_steps = warmup, s.warmup_start_factor = 0.1;
      if (s.kind == LrScheduleKind::cosine || s.kind == LrScheduleKind::linear) s.min_lr = 1e-4;
      const LrFormula f = s.formula(0.05);
      EXPECT_EQ(static_cast<int>(f.shape), static_cast<int>(s.kind)) << text;
      for (int64_t k = 1; k <= 70; ++k) EXPECT_EQ(s.rate_at(0.05, k), lr_formula_at(f, k)) << text << " step " << k;
    }
  }
  // Spot values of the closed form: cosine halfway is the mean of base and min; step halves every 7 steps.
  const LrFormula cosine{.shape = LrShape::cosine, .warmup_steps = 0, .step_every = 1, .total_steps = 10,
                         .base_lr = 1.0, .warmup_start_factor = 1, .min_lr = 0.0, .step_gamma = 1};
  EXPECT_DOUBLE_EQ(lr_formula_at(cosine, 6), 0.5);
  const LrFormula step{.shape = LrShape::step, .warmup_steps = 0, .step_every = 7, .total_steps = 100,
                       .base_lr = 1.0, .warmup_start_factor = 1, .min_lr = 0, .step_gamma = 0.5};
  EXPECT_EQ(lr_formula_at(step, 7), 1.0);
  EXPECT_EQ(lr_formula_at(step, 8), 0.5);
}

}  // namespace
}  // namespace ddpx
