// The run plan (train/run_plan.hpp): the run's length resolved once from --steps or --epochs, the schedule's horizon
// and warm-up (in steps or epochs) and --val's cadence read from it; every schedule x warm-up x {--steps, --epochs}
// combination trains through the CLI; --val alone evaluates at the end (and at each epoch's end in an epochs run);
// --epochs 0, --steps 0 and --eval-every 0 are refused naming the flag; the plan's errors that need no world come
// before the job opens (RunPlanCli.PlanErrorsThatNeedNoWorldComeBeforeTheJobOpens). torchvision's recipe parts
// (TorchvisionRunPlan): --lr-step-unit epoch counts the schedule's horizon, warm-up and step size in epochs (from
// --epochs, or the epochs a --steps run reaches into), --ema-every and --ema-copy-epochs get the epoch's size,
// --ema-adjust torchvision's decay takes the world size and --epochs, and the combinations that cannot run are
// refused naming the flag.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cli_runner.hpp"
#include "error_expect.hpp"
#include "train/run_plan.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;
using testing::run_ddpx;

TrainOptions epoch_data_run() {
  TrainOptions o;
  o.data = parse_data_spec("idx:/usr/share/datasets/fashion-mnist:test", DataOrigin::train_data);
  o.optimizer.lr = 0.1f;
  return o;
}

TEST(RunPlan, StepsOrEpochsGiveTheOneLengthTheScheduleReads) {
  TrainOptions o = epoch_data_run();
  o.steps = 40;
  o.optimizer.schedule = parse_lr_schedule("cosine");
  const RunPlan by_steps = plan_run(o, 10);
  EXPECT_EQ(by_steps.steps, 40);
  EXPECT_EQ(by_steps.schedule.total_steps, 40);
  EXPECT_EQ(by_steps.length_text, "--steps 40");
  // 3 epochs of 10 micro-batches per rank, 2 per step: 15 steps, whatever --steps says.
  o.epochs = 3;
  o.grad_accum = 2;
  const RunPlan by_epochs = plan_run(o, 10);
  EXPECT_EQ(by_epochs.steps, 15);
  EXPECT_EQ(by_epochs.steps_per_epoch, 5);
  EXPECT_EQ(by_epochs.schedule.total_steps, 15);
  EXPECT_EQ(by_epochs.length_text, "--epochs 3 = 15 steps");
  const TrainOptions planned = with_plan(o, by_epochs);
  EXPECT_EQ(planned.steps, 15);
  EXPECT_EQ(planned.optimizer.schedule.total_steps, 15);
  EXPECT_NO_THROW(planned.validate());
}

TEST(RunPlan, WarmUpInEpochsIsEpochsTimesTheStepsOfOne) {
  TrainOptions o = epoch_data_run();
  o.steps = 50;
  o.lr_warmup_epochs = 2;
  EXPECT_EQ(plan_run(o, 8).schedule.warmup_steps, 16);  // in a --steps run too
  o.optimizer.schedule.warmup_steps = 3;
  expect_error([&] { (void)plan_run(o, 8); }, {"--lr-warmup-epochs 2 and --lr-warmup-steps 3: give one"});
  o.optimizer.schedule.warmup_steps = 0;
  o.lr_warmup_epochs = 7;
  expect_error([&] { (void)plan_run(o, 8); }, {"--lr-warmup-epochs 7 (56 steps) is not shorter than the run",
                                               "--steps 50"});
  o.lr_warmup_epochs = 0;
  o.optimizer.schedule.warmup_steps = 15;
  o.epochs = 1;
  expect_error([&] { (void)plan_run(o, 8); },
               {"--lr-warmup-steps 15 is not shorter than the run (--epochs 1 = 8 steps)"});
  o.epochs = 0;
  o.optimizer.schedule.warmup_steps = 0;
  o.lr_warmup_epochs = 1;
  o.grad_accum = 20;  // an epoch of 8 micro-batches is no whole step: the warm-up would silently be none
  expect_error([&] { (void)plan_run(o, 8); }, {"--lr-warmup-epochs 1: an epoch is less than one step"});
  TrainOptions endless;
  endless.data = DataSource::learnable;
  endless.lr_warmup_epochs = 1;
  expect_error([&] { (void)plan_run(endless, 0); }, {"--lr-warmup-epochs 1 needs data with epochs"});
}

TEST(RunPlan, ValAloneEvaluatesAtTheEndAndAtEachEpochsEndInAnEpochsRun) {
  TrainOptions o = epoch_data_run();
  o.val = o.data;
  const RunPlan steps = plan_run(o, 10);
  EXPECT_EQ(steps.eval.steps, 0);
  EXPECT_FALSE(steps.eval.epoch);
  o.epochs = 2;
  const RunPlan epochs = plan_run(o, 10);
  EXPECT_TRUE(epochs.eval.epoch);
  EXPECT_EQ(epochs.steps_per_epoch, 10);
  o.eval_every = "0";
  expect_error([&] { (void)plan_run(o, 10); }, {"--eval-every 0"});
  o.eval_every = "epoch";
  o.epochs = 0;
  o.data = DataSource::learnable;
  expect_error([&] { (void)plan_run(o, 0); }, {"--eval-every epoch", "has no epochs"});
}

TEST(RunPlan, NoLengthOfZero) {
  TrainOptions o = epoch_data_run();
  o.steps = 0;
  expect_error([&] { (void)plan_run(o, 10); }, {"--steps must be positive, got 0"});
  o.steps = 100;
  o.epochs = -1;
  expect_error([&] { (void)plan_run(o, 10); }, {"--epochs -1: give a positive number of epochs"});
  o.epochs = 1;
  o.grad_accum = 20;
  expect_error([&] { (void)plan_run(o, 10); }, {"--epochs 1", "one step of --grad-accum 20"});
  // An epoch need not be a whole number of steps: 2 epochs of 3 micro-batches with --grad-accum 2 are 3 steps.
  o.epochs = 2;
  o.grad_accum = 2;
  EXPECT_EQ(plan_run(o, 3).steps, 3);
}

// Through the CLI, on Fashion-MNIST's test split (10,000 images; batch 2500: 4 batches per epoch): each schedule with
// each warm-up, the run given in steps or in epochs, trains to its last step with the horizon it printed.
const char* const kFashion = "/usr/share/datasets/fashion-mnist";

using Combination = std::tuple<std::string, std::string, bool>;  // schedule, warm-up flags, in epochs

class EveryScheduleAndWarmUp : public ::testing::TestWithParam<Combination> {};

TEST_P(EveryScheduleAndWarmUp, TrainsInStepsAndInEpochs) {
  if (!fs::exists(fs::path(kFashion) / "t10k-images-idx3-ubyte.gz")) GTEST_SKIP() << "dataset-fashion-mnist missing";
  const auto& [schedule, warmup, in_epochs] = GetParam();
  const testing::CliResult r = run_ddpx(
      "train --device cpu --model mlp:image=28,channels=1,layers=1,width=16,classes=10 --data idx:" +
      std::string(kFashion) + ":test --batch 2500 --warmup 0 --workers 1 --lr 0.05 --lr-schedule " + schedule + " " +
      warmup + (in_epochs ? " --epochs 3" : " --steps 12"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("step     12/12"), std::string::npos) << r.output;
  if (schedule == "cosine" || schedule == "linear") EXPECT_NE(r.output.find("at step 12"), std::string::npos) << r.output;
  if (!warmup.empty()) EXPECT_NE(r.output.find("warm-up 4 steps"), std::string::npos) << r.output;
}

INSTANTIATE_TEST_SUITE_P(RunPlan, EveryScheduleAndWarmUp,
                         ::testing::Combine(::testing::Values("constant", "cosine", "linear", "step:5"),
                                            ::testing::Values("", "--lr-warmup-steps 4", "--lr-warmup-epochs 1"),
                                            ::testing::Bool()));

TEST(RunPlanCli, ValAloneEvaluatesAtTheLastStepAndEpochsAtEachEnd) {
  if (!fs::exists(fs::path(kFashion) / "t10k-images-idx3-ubyte.gz")) GTEST_SKIP() << "dataset-fashion-mnist missing";
  const std::string common = "train --device cpu --model mlp:image=28,channels=1,layers=1,width=16,classes=10 --data idx:" +
                             std::string(kFashion) + ":test --val idx:" + std::string(kFashion) +
                             ":test --batch 2500 --warmup 0 --workers 1 --lr 0.05";
  const testing::CliResult steps = run_ddpx(common + " --steps 6");
  ASSERT_EQ(steps.status, 0) << steps.output;  // was SIGFPE (step % 0) after step 1
  EXPECT_EQ(steps.output.find("eval        1/6"), std::string::npos) << steps.output;
  EXPECT_NE(steps.output.find("eval        6/6"), std::string::npos) << steps.output;
  const testing::CliResult epochs = run_ddpx(common + " --epochs 2");
  ASSERT_EQ(epochs.status, 0) << epochs.output;
  EXPECT_NE(epochs.output.find("eval        4/8"), std::string::npos) << epochs.output;
  EXPECT_NE(epochs.output.find("eval        8/8"), std::string::npos) << epochs.output;
}

TEST(RunPlanCli, ZeroLengthsAndCadencesAreRefusedByName) {
  const std::string common = "train --device cpu --model mlp_tiny_test --data learnable";
  for (const auto& [flags, needle] :
       {std::pair<std::string, std::string>{" --epochs 0", "--epochs 0: give a positive number of epochs"},
        {" --steps 0", "--steps must be positive, got 0"},
        {" --val learnable --eval-every 0", "--eval-every 0"}}) {
    const testing::CliResult r = run_ddpx(common + flags);
    EXPECT_EQ(r.status, 2) << flags << "\n" << r.output;
    EXPECT_NE(r.output.find(needle), std::string::npos) << flags << "\n" << r.output;
  }
}

// Note [The job opens before the plan] (train/trainer.cpp): a plan error that needs no world (the flags against each
// other and against whether --data has epochs; the whole plan of a --steps run) is raised before the job opens, so a
// mistyped flag never waits for a rendezvous. DDPX_TEST_FAULT=start:0:throw fails the job's opening (dist/job.cpp,
// before the communicator): an error raised before it prints its own message, one raised after it would print the
// injected fault instead. The control: a plan counted in epochs is made at the job's world, so its error (an epoch of
// 4 micro-batches of 2500 is less than one --grad-accum 8 step) comes after the fault: the hook is live.
TEST(RunPlanCli, PlanErrorsThatNeedNoWorldComeBeforeTheJobOpens) {
  const std::string fault = "DDPX_TEST_FAULT=start:0:throw";
  const auto expect_before_the_job = [&](const std::string& args, const std::string& needle) {
    const testing::CliResult r = run_ddpx("train --device cpu --workers 1 --comm-timeout 20 " + args, fault);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find("ddpx: error: " + needle), std::string::npos) << args << "\n" << r.output;
    EXPECT_EQ(r.output.find("injected fault"), std::string::npos) << args << "\n" << r.output;
  };
  const testing::ScratchDir dir("ddpx-plan-before-job");
  const std::string report = (dir / "report.json").string();
  const std::string endless = "--model mlp_tiny_test --data synthetic ";
  for (const auto& [flags, needle] : std::vector<std::pair<std::string, std::string>>{
           {"--epochs 1", "--epochs 1 needs data with epochs"},
           {"--epochs -2", "--epochs -2: give a positive number of epochs"},
           {"--epochs 1 --steps 3", "--epochs 1 and --steps 3: give one"},
           {"--lr-warmup-epochs 1", "--lr-warmup-epochs 1 needs data with epochs"},
           {"--lr-step-unit epoch", "--lr-step-unit epoch needs data with epochs"},
           {"--repeated-augment 3", "--repeated-augment 3 needs data with epochs"},
           {"--ema-decay 0.99 --ema-copy-epochs 1", "--ema-copy-epochs 1 needs data with epochs"},
           {"--ema-decay 0.99 --ema-adjust torchvision --steps 5",
            "--ema-adjust torchvision divides by the run's epochs"},
           {"--val synthetic --eval-every epoch",
            "--eval-every epoch: the training data (--data synthetic) has no epochs"},
           // A run given in --steps is planned before the job: its length's checks (validate_length()) come first too.
           {"--steps 4 --lr-warmup-steps 4", "--lr-warmup-steps 4 is not shorter than the run (--steps 4)"},
           {"--steps 4 --warmup 5 --report " + report, "--report " + report + " needs steps past the warm-up"}})
    expect_before_the_job(endless + flags, needle);

  if (!fs::exists(fs::path(kFashion) / "t10k-images-idx3-ubyte.gz")) GTEST_SKIP() << "dataset-fashion-mnist missing";
  const std::string epochs = "--model mlp:image=28,channels=1,layers=1,width=16,classes=10 --batch 2500 --data idx:" +
                             std::string(kFashion) + ":test ";
  for (const auto& [flags, needle] : std::vector<std::pair<std::string, std::string>>{
           {"--lr-warmup-epochs -1", "--lr-warmup-epochs -1: must be positive"},
           {"--lr-warmup-epochs 1 --lr-warmup-steps 2", "--lr-warmup-epochs 1 and --lr-warmup-steps 2: give one"},
           {"--epochs 2 --lr-step-unit epoch --lr-warmup-steps 2", "--lr-warmup-steps 2 counts optimizer steps"},
           {"--epochs 2 --lr-step-unit epoch --lr-warmup-epochs -1", "--lr-warmup-epochs -1: must be positive"}})
    expect_before_the_job(epochs + flags, needle);
  const testing::CliResult at_the_world =
      run_ddpx("train --device cpu --workers 1 --comm-timeout 20 " + epochs + "--epochs 1 --grad-accum 8", fault);
  EXPECT_EQ(at_the_world.status, 2) << at_the_world.output;
  EXPECT_NE(at_the_world.output.find("ddpx: error: rank 0: injected fault at start"), std::string::npos)
      << at_the_world.output;
  EXPECT_EQ(at_the_world.output.find("--grad-accum 8"), std::string::npos) << at_the_world.output;
  // Without the fault the same run reaches its plan and is refused there, at the job's world of 1.
  const testing::CliResult planned =
      run_ddpx("train --device cpu --workers 1 --comm-timeout 20 " + epochs + "--epochs 1 --grad-accum 8");
  EXPECT_EQ(planned.status, 2) << planned.output;
  EXPECT_NE(planned.output.find("--epochs 1: 4 micro-batch(es) per rank do not make one step of --grad-accum 8"),
            std::string::npos)
      << planned.output;
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
