// RecipeOptions: the regularization a run trains with beyond the optimizer and its schedule (those are the
// OptimizerSpec's, optim/lr_schedule.hpp): --label-smoothing, --clip-grad-norm, --no-decay, --ema-decay, --mixup
// and --cutmix, as torchvision's classification recipe has them. Both TrainOptions and the engines' EngineOptions
// carry one; all zero (the default) is a plain run that computes exactly what it computed before these existed.
// Guarantees: validate() throws ddpx::Error naming the flag and value (non-finite, negative, out of range) and the
// combinations an engine cannot do: --clip-grad-norm needs the whole step's gradients before any update, so it
// refuses --optimizer-overlap on (auto turns the overlap off: updates_overlap_backward()). Both engines run every
// one of them (the CUDA forms, kernels/recipe.hpp, verified against the CPU engine on an H100 on 2026-12-05:
// tests/train/test_recipe_cuda.cpp).
#pragma once
#include <string>

#include <optional>

#include "data/batch_mixing.hpp"
#include "optim/ema_cadence.hpp"

namespace ddpx {

struct RecipeOptions {
  double label_smoothing = 0;  // --label-smoothing E: targets (1 - E) onehot + E / classes
  double clip_grad_norm = 0;   // --clip-grad-norm N: global L2 norm of the averaged gradients at most N; 0: off
  bool no_decay = false;       // --no-decay: no weight decay on biases, norms, position embedding, class token
  double ema_decay = 0;        // --ema-decay D: an EMA of the weights, evaluated and saved beside them; 0: off
  EmaCadence ema_cadence;      // --ema-every, --ema-copy-epochs (optim/ema_cadence.hpp); the epoch's size the plan's
  EmaAdjust ema_adjust = EmaAdjust::none;  // --ema-adjust: torchvision's decay adjustment, resolved by the run plan
  std::optional<double> ema_decay_adjusted;  // the run plan's result of --ema-adjust torchvision; nullopt: none
  MixSettings mix;             // --mixup A --cutmix B

  bool any() const {
    return label_smoothing != 0 || clip_grad_norm != 0 || no_decay || ema_decay != 0 || mix.enabled();
  }
  // The decay the average uses: --ema-decay, or its torchvision adjustment once planned.
  double ema_decay_in_use() const { return ema_decay_adjusted.value_or(ema_decay); }
  // "label smoothing 0.1, clip 1, no decay on 30 tensors, ..." for the start-up line; empty when none.
  std::string describe() const;
  void validate() const;
};

// Where --save's weight average goes: W.safetensors -> W.ema.safetensors (else W + ".ema").
std::string weight_average_path(const std::string& save);

}  // namespace ddpx
