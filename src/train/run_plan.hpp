// The run's plan: how long the run is, in optimizer steps, resolved once before anything reads it, and what
// follows from that length (the learning-rate schedule's horizon and warm-up, when --val is evaluated). The trainer
// asks plan_run() once; the loop, the schedule, the evaluator, the checkpoints (the last step's) and the progress
// line's ETA read its `steps`; nothing copies the length at parse time (the CLI leaves the schedule's horizon 0).
//
// The rules (docs/cli.md, "How long a run is"):
//  - --steps N (default 100): N optimizer steps. --epochs E instead: E x the batches each rank runs per epoch at
//    this world size (Note [Epochs and the sampler], data/epoch_sampler.hpp), then / --grad-accum (rounded down: an
//    epoch need not be a whole number of steps), for sources with epochs (idx, folder, pack, wds, --images); refused
//    on endless ones. "The steps of one epoch" (--lr-warmup-epochs, --eval-every epoch) are its micro-batches /
//    --grad-accum, rounded down.
//  - the schedule's horizon is that length; its warm-up is --lr-warmup-steps W, or --lr-warmup-epochs E' (E' x the
//    steps of one epoch; any run on a source with epochs), and must be shorter than the run.
//  - --lr-step-unit epoch (torchvision's train.py): the schedule counts epochs, its horizon --epochs (or the
//    epochs --steps reaches into), its warm-up --lr-warmup-epochs (--lr-warmup-steps refused), step:EVERY in epochs.
//  - --repeated-augment R: the data's sampler (Note [Repeated augmentation], data/epoch_sampler.hpp) sets the
//    batches per epoch, so --epochs and everything counted in epochs follow it; refused on endless sources.
//  - --ema-every, --ema-copy-epochs count within the data's epochs (optim/ema_cadence.hpp); --ema-adjust torchvision
//    needs --epochs and takes the world size given here.
//  - --val: --eval-every N (steps) or epoch (each epoch's last step); without --eval-every, at the end of the run,
//    and at each epoch's end when the run is given in --epochs. The last step always evaluates.
// Guarantees: plan_run() throws ddpx::Error naming the flag (--epochs, --lr-warmup-epochs, --lr-warmup-steps,
// --eval-every, --lr-schedule, --min-lr, --lr-step-unit, --repeated-augment, --ema-copy-epochs, --ema-adjust) for
// every plan that cannot run; a returned plan has steps >= 1, a schedule
// whose horizon is `steps` and that passed LrSchedule::validate, and an evaluation cadence with no zero divisor.
// check_plan_flags() throws, with the same messages, every one of those errors that needs no world (the flags
// against each other and against whether --data has epochs); plan_run() calls it first and keeps only the checks
// that read the epoch's size (Note [The job opens before the plan], train/trainer.cpp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "data/dataset.hpp"
#include "optim/ema_cadence.hpp"
#include "optim/lr_schedule.hpp"
#include "train/run_evaluation.hpp"
#include "train/train_options.hpp"

namespace ddpx {

struct RunPlan {
  int64_t steps = 0;            // optimizer steps of the whole run (a resumed run continues up to this step)
  int64_t steps_per_epoch = 0;  // optimizer steps of one epoch; 0 where not needed or the source has no epochs
  LrSchedule schedule;          // the horizon is `steps`, the warm-up resolved from steps or epochs
  EvalEvery eval;               // --val's cadence (none: the last step only)
  EmaCadence ema_cadence;       // --ema-every/--ema-copy-epochs with the epoch's size (when the data has epochs)
  std::optional<double> ema_decay_adjusted;  // --ema-adjust torchvision's decay; nullopt: --ema-decay as given
  // How the length was given, for messages: "--steps 100" or "--epochs 2 (= 234 steps)".
  std::string length_text;
};

// batches_per_epoch: the micro-batches each rank runs per epoch at this run's world size (Dataset::
// batches_per_epoch), 0 for an endless source; read only when the plan needs epochs. world: the job's ranks
// (DistJob::world(): a plan that needs epochs is made after the job opens, Note [The job opens before the plan]).
RunPlan plan_run(const TrainOptions& options, int64_t batches_per_epoch, int world = 1);
// The plan's checks that read no world, nor the data's size: --grad-accum, --steps, --epochs (on data with
// epochs), the warm-up's flags, --lr-step-unit epoch, --repeated-augment, --eval-every epoch, --ema-copy-epochs,
// --ema-adjust torchvision. The trainer calls it before the job opens; plan_run() calls it too.
void check_plan_flags(const TrainOptions& options);
// Whether the run's length or anything the plan sets is counted in epochs: then the plan needs the epoch's size,
// which the job's world sets. Otherwise (--steps N) epoch_batches() is 0 and the plan is the same at every world:
// the trainer makes it before the job opens.
bool plan_needs_epochs(const TrainOptions& options);
// What plan_run() takes as batches_per_epoch: the training dataset's (made from the data opened once,
// train/run_data.hpp) at the run's world size where the plan needs epochs (--epochs, --lr-warmup-epochs,
// --eval-every epoch), else 0 (nothing is counted).
int64_t epoch_batches(const TrainOptions& options, const Dataset& train, int world);

// The options the run's parts read, with the plan's length and schedule: the one place a run's --steps and the
// schedule's horizon are assigned.
TrainOptions with_plan(const TrainOptions& requested, const RunPlan& plan);

}  // namespace ddpx
