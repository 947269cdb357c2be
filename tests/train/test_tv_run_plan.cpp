// The run plan's part of torchvision's recipe (train/run_plan.hpp): --lr-step-unit epoch counts the schedule's
// horizon, warm-up and step size in epochs (from --epochs, or the epochs a --steps run reaches into), --ema-every
// and --ema-copy-epochs get the epoch's size, --ema-adjust torchvision's decay takes the world size and --epochs,
// and the combinations that cannot run are refused naming the flag.
#include <gtest/gtest.h>

#include "error_expect.hpp"
#include "train/run_plan.hpp"

namespace ddpx {
namespace {

using testing::expect_error;

TrainOptions epoch_data_run() {
  TrainOptions o;
  o.data = parse_data_spec("idx:/usr/share/datasets/fashion-mnist:test", DataOrigin::train_data);
  o.optimizer.lr = 0.1f;
  return o;
}

TEST(TorchvisionRunPlan, PerEpochScheduleCountsEpochs) {
  TrainOptions o = epoch_data_run();
  o.optimizer.schedule = parse_lr_schedule("cosine");
  o.optimizer.schedule.unit = LrStepUnit::epoch;
  o.epochs = 4;
  o.grad_accum = 2;
  o.lr_warmup_epochs = 1;
  EXPECT_TRUE(plan_needs_epochs(o));
  const RunPlan plan = plan_run(o, 10);  // 10 micro-batches an epoch, 2 a step: 20 steps
  EXPECT_EQ(plan.steps, 20);
  EXPECT_EQ(plan.schedule.total_steps, 4);
  EXPECT_EQ(plan.schedule.warmup_steps, 1);
  EXPECT_EQ(plan.schedule.micro_batches_per_epoch, 10);
  EXPECT_EQ(plan.schedule.micro_batches_per_step, 2);
  // --steps 12 of 5 steps an epoch reaches into 3 epochs: the horizon.
  o.epochs = 0;
  o.steps = 12;
  EXPECT_EQ(plan_run(o, 10).schedule.total_steps, 3);
  o.optimizer.schedule.warmup_steps = 2;
  o.lr_warmup_epochs = 0;
  expect_error([&] { (void)plan_run(o, 10); }, {"--lr-warmup-steps 2 counts optimizer steps", "--lr-warmup-epochs"});
  o.optimizer.schedule.warmup_steps = 0;
  o.lr_warmup_epochs = 3;
  expect_error([&] { (void)plan_run(o, 10); }, {"--lr-warmup-epochs 3 is not shorter than the run", "3 epoch(s)"});
  TrainOptions endless;
  endless.optimizer.schedule.unit = LrStepUnit::epoch;
  expect_error([&] { (void)plan_run(endless, 0); }, {"--lr-step-unit epoch needs data with epochs"});
}

TEST(TorchvisionRunPlan, WeightAverageCadenceAndAdjustedDecay) {
  TrainOptions o = epoch_data_run();
  o.recipe.ema_decay = 0.999;
  o.recipe.ema_cadence.every = 4;
  o.recipe.ema_cadence.copy_epochs = 1;
  o.recipe.ema_adjust = EmaAdjust::torchvision;
  o.batch = 16;
  o.epochs = 5;
  EXPECT_TRUE(plan_needs_epochs(o));
  const RunPlan plan = plan_run(o, 30, 2);
  EXPECT_EQ(plan.ema_cadence.micro_batches_per_epoch, 30);
  EXPECT_EQ(plan.ema_cadence.every, 4);
  ASSERT_TRUE(plan.ema_decay_adjusted.has_value());
  EXPECT_EQ(*plan.ema_decay_adjusted, torchvision_ema_decay(0.999, 2, 16, 4, 5));
  const TrainOptions planned = with_plan(o, plan);
  EXPECT_EQ(planned.recipe.ema_decay, 0.999);  // the flag as given; the decay in use beside it
  EXPECT_EQ(planned.recipe.ema_decay_in_use(), *plan.ema_decay_adjusted);
  o.epochs = 0;
  o.steps = 10;
  expect_error([&] { (void)plan_run(o, 30); }, {"--ema-adjust torchvision divides by the run's epochs"});
  TrainOptions endless;
  endless.recipe.ema_decay = 0.9;
  endless.recipe.ema_cadence.every = 3;  // no epochs: the run's steps
  const RunPlan steps = plan_run(endless, 0);
  EXPECT_EQ(steps.ema_cadence.micro_batches_per_epoch, 0);
  endless.recipe.ema_cadence.copy_epochs = 1;
  expect_error([&] { (void)plan_run(endless, 0); }, {"--ema-copy-epochs 1 needs data with epochs"});
  endless.recipe.ema_cadence.copy_epochs = 0;
  endless.repeated_augment = 3;
  expect_error([&] { (void)plan_run(endless, 0); }, {"--repeated-augment 3 needs data with epochs"});
}

}  // namespace
}  // namespace ddpx
