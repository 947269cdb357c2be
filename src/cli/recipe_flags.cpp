// `ddpx train`'s recipe flags (see recipe_flags.hpp).
#include "cli/recipe_flags.hpp"

#include "core/error.hpp"
#include "data/auto_augment.hpp"
#include "data/random_erasing.hpp"
#include "optim/lr_schedule.hpp"

namespace ddpx::cli {
namespace {

// A typed-but-empty value would silently mean "off" (the flags' unset state): refused instead.
const CLI::Validator kNotEmpty(
    [](std::string& text) {
      return text.empty() ? std::string("an empty value would silently mean off; leave the flag out for none") : "";
    },
    "");

}  // namespace

void add_recipe_flags(CLI::App* cmd, RecipeFlags& flags) {
  auto* group = "Schedule and regularization";
  cmd->add_option("--lr-schedule", flags.lr_schedule,
                  "constant | cosine | linear | step:EVERY[:GAMMA] | exponential:GAMMA after the warm-up, "
                  "torch.optim.lr_scheduler's CosineAnnealingLR(T_max = the steps after the warm-up, eta_min = "
                  "--min-lr), LinearLR down to --min-lr, StepLR(EVERY, GAMMA = 0.1), ExponentialLR(GAMMA) "
                  "(torchvision's --lr-scheduler cosineannealinglr|steplr|exponentiallr); on CUDA a varying rate "
                  "steps without CUDA graphs")
      ->group(group);
  cmd->add_option("--lr-warmup-steps", flags.lr_warmup_steps,
                  "linear warm-up over the first N optimizer steps from --lr-warmup-start x --lr to --lr "
                  "(LinearLR in a SequentialLR; not --warmup, which only leaves steps unmeasured)")
      ->group(group);
  cmd->add_option("--lr-warmup-epochs", flags.lr_warmup_epochs,
                  "the same warm-up over the first N epochs (N x the optimizer steps of one epoch; torchvision's "
                  "--lr-warmup-epochs); sources with epochs; not with --lr-warmup-steps")
      ->group(group);
  cmd->add_option("--lr-warmup-start", flags.lr_warmup_start,
                  "the warm-up's first rate as a fraction of --lr (torchvision's --lr-warmup-decay)")
      ->group(group);
  cmd->add_option("--lr-warmup-method", flags.lr_warmup_method,
                  "linear | constant: the warm-up rises from --lr-warmup-start x --lr to --lr (LinearLR), or stays at "
                  "--lr-warmup-start x --lr and jumps to --lr after it (ConstantLR); torchvision's --lr-warmup-method")
      ->group(group);
  cmd->add_option("--lr-step-unit", flags.lr_step_unit,
                  "step | epoch: the rate changes after every optimizer step, or only at epoch boundaries as "
                  "torchvision's train.py steps its scheduler; with epoch the horizon, the warm-up "
                  "(--lr-warmup-epochs) and step:EVERY count epochs (sources with epochs)")
      ->group(group);
  cmd->add_option("--min-lr", flags.min_lr, "the rate cosine and linear end at (torchvision's --lr-min)")
      ->group(group);
  cmd->add_option("--label-smoothing", flags.recipe.label_smoothing,
                  "targets (1 - E) onehot + E / classes, torch's cross_entropy(label_smoothing=E)")
      ->group(group);
  cmd->add_option("--clip-grad-norm", flags.recipe.clip_grad_norm,
                  "scale the averaged gradients so their global L2 norm is at most N (clip_grad_norm_ after the "
                  "all-reduce, so every rank agrees); the norm is in progress lines and --metrics")
      ->group(group);
  cmd->add_flag("--no-decay", flags.recipe.no_decay,
                "no weight decay on biases, norm weights, the position embedding and the class token "
                "(torchvision's --norm-weight-decay 0 --bias-weight-decay 0 --transformer-embedding-decay 0)")
      ->group(group);
  cmd->add_option("--ema-decay", flags.recipe.ema_decay,
                  "keep an exponential moving average of the weights (avg = D avg + (1 - D) w after each step, or "
                  "on --ema-every's cadence; "
                  "torchvision's --model-ema), evaluated beside them, saved as <--save>.ema.safetensors and in checkpoints "
                  "(--resume continues it with the same D)")
      ->group(group);
  cmd->add_option("--ema-every", flags.recipe.ema_cadence.every,
                  "N: update the average only after the optimizer steps i with i % N == 0, i counted from 0 in each "
                  "epoch (in the run where the data has no epochs); torchvision's --model-ema-steps (its default is "
                  "32, ddpx's 1)")
      ->group(group);
  cmd->add_option("--ema-copy-epochs", flags.recipe.ema_cadence.copy_epochs,
                  "during the first E epochs each update copies the weights instead of averaging (torchvision "
                  "does this during its --lr-warmup-epochs)")
      ->group(group);
  cmd->add_option("--ema-adjust", flags.ema_adjust,
                  "none | torchvision: use --ema-decay D as given, or 1 - min(1, (1 - D) x ranks x --batch x "
                  "--grad-accum x --ema-every / --epochs) as torchvision's train.py does with --model-ema-decay; "
                  "needs --epochs; the run report shows both")
      ->group(group);
  cmd->add_option("--repeated-augment", flags.repeated_augment,
                  "R >= 2: each epoch shows every sample R times, consecutively in torch.randperm's order (seed "
                  "--seed + epoch), spread over the ranks and augmented differently each time, with an epoch of "
                  "len // 256 x 256 samples (torchvision's --ra-sampler --ra-reps R); 0 or 1: off; idx, folder "
                  "and pack sources")
      ->group(group);
  cmd->add_option("--eval-every", flags.eval_every,
                  "N | epoch: evaluate on --val every N steps or at each epoch's end, and at the last step: loss, "
                  "top-1 and top-5 over the whole set, sharded exactly across ranks (with --ema-decay, the average "
                  "too); in progress lines, --metrics, the run report and the verdict. Without it, --val is "
                  "evaluated at the last step, and at each epoch's end in a run given in --epochs")
      ->group(group);
  cmd->add_option("--metrics", flags.metrics,
                  "write JSON Lines as the run goes (rank 0, flushed at each progress line): step, lr, loss, grad "
                  "norm, images/s, and each evaluation; `ddpx report --metrics FILE` draws them")
      ->group(group);
  cmd->add_flag("--reset-head", flags.reset_head,
                "with --load W: load every tensor but the classifier head, which starts from --seed's "
                "initialization (fine-tuning on another number of classes; the skipped tensors are listed)")
      ->group(group);
  cmd->add_option("--mixup", flags.recipe.mix.mixup_alpha, "mixup with lambda ~ Beta(A, A) (0: off)")->group(group);
  cmd->add_option("--cutmix", flags.recipe.mix.cutmix_alpha,
                  "cutmix with lambda ~ Beta(B, B) (0: off); with --mixup each batch picks one")
      ->group(group);
  cmd->add_option("--randaugment", flags.randaugment,
                  "N,M: image sources' training data: torchvision's RandAugment(num_ops=N, magnitude=M) on the "
                  "loader threads after the crop and flip, before normalization (torchvision's --auto-augment ra "
                  "--ra-magnitude M is 2,M); N 1 to 16, M 0 to 30; off by default; --val is never augmented; "
                  "docs/results.md says what it costs the loader")
      ->check(kNotEmpty)
      ->group(group);
  cmd->add_flag("--trivial-augment", flags.trivial_augment,
                "image sources' training data: torchvision's TrivialAugmentWide() (its --auto-augment ta_wide: one op "
                "per image at a random one of 31 magnitudes, wide ranges) where --randaugment goes; not with "
                "--randaugment or --auto-augment-policy")
      ->group(group);
  cmd->add_option("--auto-augment-policy", flags.auto_augment_policy,
                  "imagenet | cifar10 | svhn: image sources' training data: torchvision's AutoAugment with that "
                  "AutoAugmentPolicy (its --auto-augment imagenet) where --randaugment goes; one automatic "
                  "augmentation per run")
      ->check(kNotEmpty)
      ->group(group);
  cmd->add_option("--random-erase", flags.random_erase,
                  "P: image sources' training data: torchvision's RandomErasing(p=P) (its --random-erase; erase a "
                  "box of 2-33% of the image, aspect 0.3-3.3, to 0 after Normalize) on the loader threads; 0 to 1, "
                  "0: off; not with --normalize device")
      ->check(kNotEmpty)
      ->group(group);
}

void apply_recipe_flags(const RecipeFlags& flags, TrainOptions& options) {
  LrSchedule schedule = parse_lr_schedule(flags.lr_schedule);
  schedule.warmup_steps = flags.lr_warmup_steps;
  schedule.warmup_start_factor = flags.lr_warmup_start;
  schedule.min_lr = flags.min_lr;
  schedule.warmup_method = parse_lr_warmup_method(flags.lr_warmup_method);
  schedule.unit = parse_lr_step_unit(flags.lr_step_unit);
  // The horizon (and a warm-up in epochs) are the run plan's, resolved once the run's length is known
  // (train/run_plan.hpp); here the schedule is checked as far as it goes without it.
  options.optimizer.schedule = schedule;
  options.lr_warmup_epochs = flags.lr_warmup_epochs;
  options.optimizer.validate();  // the schedule's checks name --lr-warmup-steps, --min-lr, ...
  options.recipe = flags.recipe;
  options.recipe.ema_adjust = parse_ema_adjust(flags.ema_adjust);
  DDPX_REQUIRE(flags.repeated_augment >= 0,
               "--repeated-augment {}: give the repetitions of each sample per epoch, 2 or more (torchvision's "
               "--ra-reps, 3 in its recipes), or 0 to turn it off", flags.repeated_augment);
  options.repeated_augment = flags.repeated_augment;
  options.reset_head = flags.reset_head;
  options.metrics = flags.metrics;
  options.eval_every = flags.eval_every;
  options.recipe.validate();
  options.image_pipeline.auto_augment =
      choose_auto_augment(flags.randaugment, flags.trivial_augment, flags.auto_augment_policy);
  if (!flags.random_erase.empty()) options.image_pipeline.random_erasing = parse_random_erase(flags.random_erase);
}

}  // namespace ddpx::cli
