// EmaCadence: when the weight average (--ema-decay, optim/weight_average.hpp) is updated, as torchvision's
// references/classification/train.py drives its ExponentialMovingAverage, and the decay its --model-ema adjusts.
//  - --ema-every N: after the optimizer step of batch i of an epoch (0-based) when i % N == 0 (train.py's
//    `i % args.model_ema_steps == 0`); on a source without epochs i is the run's step - 1. Default 1: every step.
//  - --ema-copy-epochs E: an update during the first E epochs copies the weights (train.py resets n_averaged after
//    each update while epoch < --lr-warmup-epochs), so the first update after them copies too; default 0.
//  - --ema-adjust torchvision: decay = 1 - min(1, (1 - D) x world x batch x N / epochs), in double as Python
//    computes it (batch: the images one rank takes per optimizer step, --batch x --grad-accum).
// An optimizer step's epoch is the epoch of its first micro-batch, (step - 1) x grad_accum / B (B micro-batches per
// epoch on each rank), the convention of --lr-step-unit epoch (core/lr_formula.hpp); i counts the steps since the
// epoch's first step. ViT and every ddpx model keep no buffers (no BatchNorm statistics), so there is nothing
// beside the parameters for the average to copy (train.py's use_buffers=True has nothing to do here).
// Guarantees: pure functions of the step; with the defaults every step updates and none resets, what ddpx did
// before these flags; tests/optim/test_tv_ema.cpp drives WeightAverage with this cadence against torch's
// AveragedModel (tools/make_tv_recipe_fixtures.py). validate() throws ddpx::Error naming the flag.
#pragma once
#include <cstdint>
#include <string_view>

namespace ddpx {

enum class EmaAdjust { none, torchvision };  // --ema-adjust

struct EmaCadence {
  int64_t every = 1;        // --ema-every
  int64_t copy_epochs = 0;  // --ema-copy-epochs
  // The run plan's (train/run_plan.hpp): micro-batches of one optimizer step and of one epoch on each rank; 0 per
  // epoch: the source has no epochs (or the cadence needs none), and `every` counts the run's steps.
  int64_t micro_batches_per_step = 1, micro_batches_per_epoch = 0;

  // Whether optimizer step `step` (1-based) updates the average.
  bool updates_at(int64_t step) const;
  // Whether the update after step `step` leaves the average to be copied by the next one (its epoch < copy_epochs).
  bool copies_at(int64_t step) const;
  // Every step updates, none copies: the update may be captured in a replayed CUDA graph.
  bool every_step() const { return every == 1 && copy_epochs == 0; }
  void validate() const;  // --ema-every >= 1, --ema-copy-epochs >= 0
  bool operator==(const EmaCadence&) const = default;
};

EmaAdjust parse_ema_adjust(std::string_view text);
const char* ema_adjust_name(EmaAdjust adjust);
// train.py's adjusted decay: 1 - min(1, (1 - decay) x world x batch x every / epochs); epochs >= 1.
double torchvision_ema_decay(double decay, int64_t world, int64_t batch, int64_t every, int64_t epochs);

}  // namespace ddpx
