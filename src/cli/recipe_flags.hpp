// The training recipe's flags of `ddpx train` (--lr-schedule and its warm-up, --lr-step-unit, --label-smoothing,
// --clip-grad-norm, --no-decay, --ema-decay and its cadence, --mixup, --cutmix, --randaugment, --trivial-augment,
// --auto-augment-policy, --random-erase, --repeated-augment): registered in one group, parsed once into the
// OptimizerSpec's LrSchedule, TrainOptions::recipe and (the augmentations, which the loader applies)
// TrainOptions::image_pipeline.
// Guarantee: apply_recipe_flags() validates what it sets and throws ddpx::Error naming the flag and value before
// any training starts (a non-finite or negative value, --min-lr above --lr).
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "train/train_options.hpp"

namespace ddpx::cli {

struct RecipeFlags {
  std::string lr_schedule = "constant";
  int64_t lr_warmup_steps = 0, lr_warmup_epochs = 0;
  double lr_warmup_start = 0.01, min_lr = 0;
  std::string lr_warmup_method = "linear", lr_step_unit = "step";
  std::string ema_adjust = "none";
  int64_t repeated_augment = 0;
  RecipeOptions recipe;
  bool reset_head = false;
  std::string metrics, eval_every;
  std::string randaugment;  // "N,M"; empty: off
  bool trivial_augment = false;
  std::string auto_augment_policy;  // imagenet | cifar10 | svhn; empty: off
  std::string random_erase;         // "P"; empty: off
};

void add_recipe_flags(CLI::App* cmd, RecipeFlags& flags);
// Sets options.optimizer.schedule (its horizon left to the run plan, train/run_plan.hpp), options.lr_warmup_epochs and
// options.recipe; call after the optimizer is parsed.
void apply_recipe_flags(const RecipeFlags& flags, TrainOptions& options);

}  // namespace ddpx::cli
