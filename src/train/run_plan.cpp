// The run's plan (see run_plan.hpp for the rules and guarantees).
#include "train/run_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "core/error.hpp"
#include "data/dataset.hpp"
#include "dist/bootstrap.hpp"
#include "optim/hyperparameter.hpp"

namespace ddpx {
namespace {

// --epochs needs a source that ends; the message says which ones do.
void require_epochs(const TrainOptions& options, int64_t batches_per_epoch, const std::string& flag) {
  DDPX_REQUIRE(options.data.has_epochs() && batches_per_epoch > 0,
               "{} needs data with epochs (--images/--labels, idx:, folder:, pack:, wds:); --data {} is endless: "
               "give steps instead", flag, options.data.text());
}

int64_t run_steps(const TrainOptions& options, int64_t batches_per_epoch) {
  if (options.epochs == 0) {
    DDPX_REQUIRE(options.steps > 0, "--steps must be positive, got {}", options.steps);
    return options.steps;
  }
  DDPX_REQUIRE(options.epochs > 0, "--epochs {}: give a positive number of epochs (or --steps N)", options.epochs);
  require_epochs(options, batches_per_epoch, fmt::format("--epochs {}", options.epochs));
  // The micro-batches of all epochs, then the steps they make (an epoch need not be a whole number of steps).
  const int64_t steps = options.epochs * batches_per_epoch / options.grad_accum;
  DDPX_REQUIRE(steps >= 1, "--epochs {}: {} micro-batch(es) per rank do not make one step of --grad-accum {}",
               options.epochs, options.epochs * batches_per_epoch, options.grad_accum);
  return steps;
}

LrSchedule planned_schedule(const TrainOptions& options, const RunPlan& plan) {
  LrSchedule schedule = options.optimizer.schedule;
  schedule.total_steps = plan.steps;
  if (options.lr_warmup_epochs != 0) {
    DDPX_REQUIRE(options.lr_warmup_epochs > 0, "--lr-warmup-epochs {}: must be positive (0: no warm-up)",
                 options.lr_warmup_epochs);
    DDPX_REQUIRE(schedule.warmup_steps == 0,
                 "--lr-warmup-epochs {} and --lr-warmup-steps {}: give one (both set the warm-up's length)",
                 options.lr_warmup_epochs, schedule.warmup_steps);
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

EvalEvery planned_evaluation(const TrainOptions& options, const RunPlan& plan) {
  if (!options.val) return {};
  // --val alone: each epoch's end in a run given in epochs (where an epoch is at least one step), and the last step.
  if (options.eval_every.empty()) return {.epoch = options.epochs > 0 && plan.steps_per_epoch > 0};
  const EvalEvery every = parse_eval_every(options.eval_every);
  if (every.epoch) {
    DDPX_REQUIRE(options.data.has_epochs(),
                 "--eval-every epoch: the training data (--data {}) has no epochs; give a number of steps instead",
                 options.data.text());
    DDPX_REQUIRE(plan.steps_per_epoch > 0,
                 "--eval-every epoch: an epoch is less than one step of --grad-accum {}; give a number of steps",
                 options.grad_accum);
  }
  return every;
}

}  // namespace

bool plan_needs_epochs(const TrainOptions& options) {
  return options.epochs != 0 || options.lr_warmup_epochs != 0 || options.eval_every == "epoch";
}

RunPlan plan_run(const TrainOptions& options, int64_t batches_per_epoch) {
  DDPX_REQUIRE(options.grad_accum >= 1, "--grad-accum must be >= 1, got {}", options.grad_accum);
  RunPlan plan;
  if (plan_needs_epochs(options)) {
    if (options.lr_warmup_epochs != 0)
      require_epochs(options, batches_per_epoch, fmt::format("--lr-warmup-epochs {}", options.lr_warmup_epochs));
    plan.steps_per_epoch = batches_per_epoch / options.grad_accum;
  }
  plan.steps = run_steps(options, batches_per_epoch);
  plan.length_text = options.epochs > 0 ? fmt::format("--epochs {} = {} steps", options.epochs, plan.steps)
                                        : fmt::format("--steps {}", plan.steps);
  plan.schedule = planned_schedule(options, plan);
  plan.eval = planned_evaluation(options, plan);
  return plan;
}

int64_t epoch_batches(const TrainOptions& options, const Dataset& train) {
  if (!plan_needs_epochs(options) || !options.data.has_epochs()) return 0;
  return train.batches_per_epoch(detect_world().world_size, options.batch);
}

TrainOptions with_plan(const TrainOptions& requested, const RunPlan& plan) {
  TrainOptions options = requested;
  options.steps = plan.steps;
  options.optimizer.schedule = plan.schedule;
  return options;
}

}  // namespace ddpx
