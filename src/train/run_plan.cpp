// The run's plan (see run_plan.hpp for the rules and guarantees).
#include "train/run_plan.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "data/dataset.hpp"
#include "optim/hyperparameter.hpp"

namespace ddpx {
namespace {

// --epochs needs a source that ends; the message says which ones do.
void require_epochs(const TrainOptions& options, const std::string& flag) {
  DDPX_REQUIRE(options.data.has_epochs(),
               "{} needs data with epochs (--images/--labels, idx:, folder:, pack:, wds:); --data {} is endless: "
               "give steps instead", flag, options.data.text());
}

// The world-free part of run_steps (check_plan_flags()).
void check_length_flags(const TrainOptions& options) {
  if (options.epochs == 0) {
    DDPX_REQUIRE(options.steps > 0, "--steps must be positive, got {}", options.steps);
    return;
  }
  DDPX_REQUIRE(options.epochs > 0, "--epochs {}: give a positive number of epochs (or --steps N)", options.epochs);
  require_epochs(options, fmt::format("--epochs {}", options.epochs));
}

// The world-free part of planned_schedule (check_plan_flags()): the warm-up's flags against each other and the
// schedule's unit.
void check_schedule_flags(const TrainOptions& options) {
  const LrSchedule& schedule = options.optimizer.schedule;
  DDPX_REQUIRE(options.lr_warmup_epochs >= 0, "--lr-warmup-epochs {}: must be positive (0: no warm-up)",
               options.lr_warmup_epochs);
  if (schedule.unit == LrStepUnit::epoch) {
    require_epochs(options, "--lr-step-unit epoch");
    DDPX_REQUIRE(schedule.warmup_steps == 0,
                 "--lr-warmup-steps {} counts optimizer steps, but --lr-step-unit epoch changes the rate once per "
                 "epoch: give the warm-up in epochs (--lr-warmup-epochs)", schedule.warmup_steps);
    return;
  }
  DDPX_REQUIRE(options.lr_warmup_epochs == 0 || schedule.warmup_steps == 0,
               "--lr-warmup-epochs {} and --lr-warmup-steps {}: give one (both set the warm-up's length)",
               options.lr_warmup_epochs, schedule.warmup_steps);
}

// The world-free part of plan_weight_average (check_plan_flags()).
void check_weight_average_flags(const TrainOptions& options) {
  const RecipeOptions& recipe = options.recipe;
  if (recipe.ema_decay == 0) return;
  if (recipe.ema_cadence.copy_epochs != 0)
    require_epochs(options, fmt::format("--ema-copy-epochs {}", recipe.ema_cadence.copy_epochs));
  if (recipe.ema_adjust == EmaAdjust::torchvision)
    DDPX_REQUIRE(options.epochs > 0,
                 "--ema-adjust torchvision divides by the run's epochs (1 - (1 - D) x world x batch x --ema-every / "
                 "epochs): give the run in --epochs, or --ema-adjust none");
}

// The world-free part of planned_evaluation (check_plan_flags()).
void check_evaluation_flags(const TrainOptions& options) {
  if (!options.val || options.eval_every.empty()) return;
  if (parse_eval_every(options.eval_every).epoch)
    DDPX_REQUIRE(options.data.has_epochs(),
                 "--eval-every epoch: the training data (--data {}) has no epochs; give a number of steps instead",
                 options.data.text());
}

// check_plan_flags() has passed: a run given in --steps has steps > 0, one in --epochs data with epochs.
int64_t run_steps(const TrainOptions& options, int64_t batches_per_epoch) {
  if (options.epochs == 0) return options.steps;
  // The micro-batches of all epochs, then the steps they make (an epoch need not be a whole number of steps).
  const int64_t steps = options.epochs * batches_per_epoch / options.grad_accum;
  DDPX_REQUIRE(steps >= 1, "--epochs {}: {} micro-batch(es) per rank do not make one step of --grad-accum {}",
               options.epochs, options.epochs * batches_per_epoch, options.grad_accum);
  return steps;
}

// --lr-step-unit epoch: the schedule counts epochs (core/lr_formula.hpp), as torchvision's train.py steps it. Its
// flags (data with epochs, no --lr-warmup-steps, --lr-warmup-epochs >= 0) passed check_schedule_flags().
LrSchedule per_epoch_schedule(const TrainOptions& options, const RunPlan& plan, int64_t batches_per_epoch,
                              LrSchedule schedule) {
  schedule.micro_batches_per_step = options.grad_accum;
  schedule.micro_batches_per_epoch = batches_per_epoch;
  // The horizon: --epochs, or the epochs a run given in --steps reaches into.
  schedule.total_steps = options.epochs > 0 ? options.epochs
                                            : (plan.steps * options.grad_accum + batches_per_epoch - 1) / batches_per_epoch;
  schedule.warmup_steps = options.lr_warmup_epochs;
  DDPX_REQUIRE(schedule.warmup_steps < schedule.total_steps,
               "--lr-warmup-epochs {} is not shorter than the run ({}, {} epoch(s) with --lr-step-unit epoch): the "
               "schedule would never reach --lr; give a shorter warm-up or a longer run", options.lr_warmup_epochs,
               plan.length_text, schedule.total_steps);
  schedule.validate(typed_decimal(options.optimizer.lr));  // --lr-schedule, --min-lr, --lr-warmup-start
  return schedule;
}

LrSchedule planned_schedule(const TrainOptions& options, const RunPlan& plan, int64_t batches_per_epoch) {
  LrSchedule schedule = options.optimizer.schedule;
  schedule.total_steps = plan.steps;
  if (schedule.unit == LrStepUnit::epoch) return per_epoch_schedule(options, plan, batches_per_epoch, schedule);
  if (options.lr_warmup_epochs != 0) {  // > 0 and without --lr-warmup-steps: check_schedule_flags()
    DDPX_REQUIRE(plan.steps_per_epoch > 0,
                 "--lr-warmup-epochs {}: an epoch is less than one step of --grad-accum {}; give --lr-warmup-steps",
                 options.lr_warmup_epochs, options.grad_accum);
    schedule.warmup_steps = options.lr_warmup_epochs * plan.steps_per_epoch;
    DDPX_REQUIRE(schedule.warmup_steps < plan.steps,
                 "--lr-warmup-epochs {} ({} steps) is not shorter than the run ({}): the schedule would never reach "
                 "--lr; give a shorter warm-up or a longer run", options.lr_warmup_epochs, schedule.warmup_steps,
                 plan.length_text);
  }
  DDPX_REQUIRE(schedule.warmup_steps < plan.steps || schedule.warmup_steps == 0,
               "--lr-warmup-steps {} is not shorter than the run ({}): the schedule would never reach --lr; give a "
               "warm-up of fewer steps or a longer run", schedule.warmup_steps, plan.length_text);
  schedule.validate(typed_decimal(options.optimizer.lr));  // --lr-schedule, --min-lr, --lr-warmup-start
  return schedule;
}

// --ema-every and --ema-copy-epochs count within epochs where the data has them; --ema-adjust torchvision needs
// the run's epochs (check_weight_average_flags()) and the world size (optim/ema_cadence.hpp).
void plan_weight_average(const TrainOptions& options, int64_t batches_per_epoch, int world, RunPlan& plan) {
  const RecipeOptions& recipe = options.recipe;
  plan.ema_cadence = recipe.ema_cadence;
  if (recipe.ema_decay == 0) return;
  if (options.data.has_epochs() && batches_per_epoch > 0) {
    plan.ema_cadence.micro_batches_per_step = options.grad_accum;
    plan.ema_cadence.micro_batches_per_epoch = batches_per_epoch;
  }
  if (recipe.ema_adjust == EmaAdjust::torchvision) {
    plan.ema_decay_adjusted = torchvision_ema_decay(recipe.ema_decay, world, options.batch * options.grad_accum,
                                                    recipe.ema_cadence.every, options.epochs);
  }
}

EvalEvery planned_evaluation(const TrainOptions& options, const RunPlan& plan) {
  if (!options.val) return {};
  // --val alone: each epoch's end in a run given in epochs (where an epoch is at least one step), and the last step.
  if (options.eval_every.empty()) return {.epoch = options.epochs > 0 && plan.steps_per_epoch > 0};
  const EvalEvery every = parse_eval_every(options.eval_every);
  if (every.epoch) {  // on data with epochs: check_evaluation_flags()
    DDPX_REQUIRE(plan.steps_per_epoch > 0,
                 "--eval-every epoch: an epoch is less than one step of --grad-accum {}; give a number of steps",
                 options.grad_accum);
  }
  return every;
}

}  // namespace

bool plan_needs_epochs(const TrainOptions& options) {
  const RecipeOptions& recipe = options.recipe;
  return options.epochs != 0 || options.lr_warmup_epochs != 0 || options.eval_every == "epoch" ||
         options.optimizer.schedule.unit == LrStepUnit::epoch || options.repeated_augment > 1 ||
         (recipe.ema_decay != 0 && !recipe.ema_cadence.every_step());
}

void check_plan_flags(const TrainOptions& options) {
  DDPX_REQUIRE(options.grad_accum >= 1, "--grad-accum must be >= 1, got {}", options.grad_accum);
  if (options.lr_warmup_epochs != 0)
    require_epochs(options, fmt::format("--lr-warmup-epochs {}", options.lr_warmup_epochs));
  if (options.repeated_augment > 1)
    require_epochs(options, fmt::format("--repeated-augment {}", options.repeated_augment));
  check_length_flags(options);
  check_schedule_flags(options);
  check_evaluation_flags(options);
  check_weight_average_flags(options);
}

RunPlan plan_run(const TrainOptions& options, int64_t batches_per_epoch, int world) {
  check_plan_flags(options);
  RunPlan plan;
  if (plan_needs_epochs(options)) {
    // A dataset with epochs has at least one batch per rank in each (data/epoch_sampler.hpp refuses fewer).
    DDPX_INTERNAL_ASSERT(!options.data.has_epochs() || batches_per_epoch >= 1,
                         "a plan counted in epochs of --data {} was given {} batches per epoch", options.data.text(),
                         batches_per_epoch);
    plan.steps_per_epoch = batches_per_epoch / options.grad_accum;
  }
  plan.steps = run_steps(options, batches_per_epoch);
  plan.length_text = options.epochs > 0 ? fmt::format("--epochs {} = {} steps", options.epochs, plan.steps)
                                        : fmt::format("--steps {}", plan.steps);
  plan.schedule = planned_schedule(options, plan, batches_per_epoch);
  plan.eval = planned_evaluation(options, plan);
  plan_weight_average(options, batches_per_epoch, world, plan);
  return plan;
}

int64_t epoch_batches(const TrainOptions& options, const Dataset& train, int world) {
  if (!plan_needs_epochs(options) || !options.data.has_epochs()) return 0;
  return train.batches_per_epoch(world, options.batch);
}

TrainOptions with_plan(const TrainOptions& requested, const RunPlan& plan) {
  TrainOptions options = requested;
  options.steps = plan.steps;
  options.optimizer.schedule = plan.schedule;
  options.recipe.ema_cadence = plan.ema_cadence;
  options.recipe.ema_decay_adjusted = plan.ema_decay_adjusted;
  return options;
}

}  // namespace ddpx
