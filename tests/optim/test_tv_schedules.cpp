// The learning rate of torchvision's train.py against torch (tests/fixtures/tv_recipe_torch.json from
// tools/make_tv_recipe_fixtures.py): the main scheduler built first, a LinearLR or ConstantLR warm-up and a
// SequentialLR over both, scheduler.step() once per epoch or once per optimizer step; LrSchedule's rate at every
// optimizer step within 1e-12 relative (closed forms in double against torch's chained float64 recurrences).
// Also: the epoch of a step under --grad-accum, and the new flags' bad values.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "error_expect.hpp"
#include "optim/lr_schedule.hpp"
#include "tv_recipe_fixture.hpp"

namespace ddpx {
namespace {

using testing::expect_error;
using testing::tv_recipe_fixture;

LrSchedule schedule_of(const nlohmann::json& c) {
  const std::string main = c["main"];
  LrSchedule s = parse_lr_schedule(main == "step"          ? fmt::format("step:{}:{}", c["step_size"].get<int64_t>(),
                                                                         c["gamma"].get<double>())
                                   : main == "exponential" ? fmt::format("exponential:{}", c["gamma"].get<double>())
                                                           : main);
  s.warmup_steps = c["warmup"];
  s.warmup_start_factor = c["start"];
  s.warmup_method = parse_lr_warmup_method(c["method"].get<std::string>());
  s.min_lr = c["min_lr"];
  s.total_steps = c["units"];
  s.unit = parse_lr_step_unit(c["unit"].get<std::string>());
  if (s.unit == LrStepUnit::epoch) s.micro_batches_per_step = 1, s.micro_batches_per_epoch = c["per_unit"];
  return s;
}

TEST(TorchvisionSchedules, EveryOptimizerStepMatchesTrainPyStepping) {
  const auto& cases = tv_recipe_fixture()["schedules"];
  ASSERT_EQ(cases.size(), 16u);
  int per_epoch = 0, constant_warmup = 0, exponential = 0;
  for (const auto& c : cases) {
    const LrSchedule s = schedule_of(c);
    const double base = c["base_lr"];
    s.validate(base);
    const auto rates = c["rates"].get<std::vector<double>>();
    ASSERT_EQ(static_cast<int64_t>(rates.size()), c["units"].get<int64_t>() * c["per_unit"].get<int64_t>());
    for (size_t i = 0; i < rates.size(); ++i)
      EXPECT_NEAR(s.rate_at(base, static_cast<int64_t>(i) + 1), rates[i], 1e-12 * base)
          << s.describe() << " step " << i + 1;
    per_epoch += s.unit == LrStepUnit::epoch;
    constant_warmup += s.warmup_steps > 0 && s.warmup_method == LrWarmupMethod::constant;
    exponential += s.kind == LrScheduleKind::exponential;
  }
  EXPECT_EQ(per_epoch, 8);
  EXPECT_EQ(constant_warmup, 6);
  EXPECT_EQ(exponential, 6);
}

TEST(TorchvisionSchedules, PerEpochTheRateChangesOnlyAtTheFirstStepOfAnEpoch) {
  // 5 micro-batches an epoch, 2 a step (--grad-accum 2): steps 1-3 start in epoch 0 (micro-batches 0, 2, 4), steps
  // 4-5 in epoch 1 (6, 8), steps 6-8 in epoch 2 (10, 12, 14): the epoch of a step is that of its first micro-batch.
  LrSchedule s = parse_lr_schedule("exponential:0.5");
  s.unit = LrStepUnit::epoch, s.total_steps = 4, s.micro_batches_per_step = 2, s.micro_batches_per_epoch = 5;
  const std::vector<double> expected{1, 1, 1, 0.5, 0.5, 0.25, 0.25, 0.25, 0.125, 0.125};
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(s.rate_at(1.0, static_cast<int64_t>(i) + 1), expected[i]);
  EXPECT_EQ(s.describe(), "exponential x0.5 per epoch, stepped per epoch");
  s.warmup_steps = 1, s.warmup_method = LrWarmupMethod::constant, s.warmup_start_factor = 0.25;
  EXPECT_EQ(s.rate_at(1.0, 3), 0.25);  // epoch 0: ConstantLR's factor
  EXPECT_EQ(s.rate_at(1.0, 4), 1.0);   // epoch 1: the main schedule from its start
  EXPECT_EQ(s.describe(), "exponential x0.5 per epoch, constant warm-up 1 epochs at 0.25x, stepped per epoch");
}

TEST(TorchvisionSchedules, BadValuesNameTheFlag) {
  expect_error([] { parse_lr_schedule("exponential"); }, {"--lr-schedule exponential", "gamma"});
  expect_error([] { parse_lr_schedule("exponential:"); }, {"--lr-schedule", "exponential:0.9"});
  expect_error([] { parse_lr_schedule("exponential:1.5"); }, {"--lr-schedule exponential:1.5", "(0, 1]"});
  expect_error([] { parse_lr_schedule("exponential:nan"); }, {"--lr-schedule"});
  expect_error([] { parse_lr_schedule("exponential:0"); }, {"--lr-schedule"});
  expect_error([] { parse_lr_schedule("expo"); }, {"unknown --lr-schedule 'expo'", "exponential:GAMMA"});
  expect_error([] { parse_lr_warmup_method("cosine"); }, {"--lr-warmup-method 'cosine'", "linear", "constant"});
  expect_error([] { parse_lr_step_unit("epochs"); }, {"--lr-step-unit 'epochs'", "step", "epoch"});
  EXPECT_EQ(parse_lr_schedule("exponential:0.9").step_gamma, 0.9);
  EXPECT_EQ(parse_lr_warmup_method("constant"), LrWarmupMethod::constant);
  EXPECT_EQ(parse_lr_step_unit("epoch"), LrStepUnit::epoch);
}

}  // namespace
}  // namespace ddpx
