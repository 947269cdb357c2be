// The recipe's regularization options (see recipe_options.hpp).
#include "train/recipe_options.hpp"

#include <fmt/format.h>

#include <cmath>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "optim/grad_clip.hpp"
#include "optim/weight_average.hpp"

namespace ddpx {

std::string RecipeOptions::describe() const {
  std::vector<std::string> parts;
  if (label_smoothing != 0) parts.push_back(fmt::format("label smoothing {}", label_smoothing));
  if (clip_grad_norm != 0) parts.push_back(fmt::format("clip grad norm {}", clip_grad_norm));
  if (no_decay) parts.push_back("no decay on biases, norms, embeddings");
  if (ema_decay != 0) {
    std::string ema = fmt::format("EMA {}", ema_decay);
    if (ema_decay_adjusted) ema += fmt::format(" (used: {}, torchvision's adjustment)", *ema_decay_adjusted);
    if (ema_cadence.every != 1) ema += fmt::format(" every {} steps of an epoch", ema_cadence.every);
    if (ema_cadence.copy_epochs != 0) ema += fmt::format(", copied during {} epoch(s)", ema_cadence.copy_epochs);
    parts.push_back(ema);
  }
  if (mix.mixup_alpha != 0) parts.push_back(fmt::format("mixup {}", mix.mixup_alpha));
  if (mix.cutmix_alpha != 0) parts.push_back(fmt::format("cutmix {}", mix.cutmix_alpha));
  std::string text;
  for (const std::string& part : parts) text += (text.empty() ? "" : ", ") + part;
  return text;
}

std::string weight_average_path(const std::string& save) {
  constexpr std::string_view suffix = ".safetensors";
  if (save.size() > suffix.size() && save.compare(save.size() - suffix.size(), suffix.size(), suffix) == 0)
    return save.substr(0, save.size() - suffix.size()) + ".ema" + std::string(suffix);
  return save + ".ema";
}

void RecipeOptions::validate() const {
  DDPX_REQUIRE(std::isfinite(label_smoothing) && label_smoothing >= 0 && label_smoothing < 1,
               "--label-smoothing must be in [0, 1) (the share of each target spread over all classes; torchvision's "
               "ViT recipe uses 0.11), got {}", label_smoothing);
  if (clip_grad_norm != 0) validate_clip_grad_norm(clip_grad_norm);
  if (ema_decay != 0) validate_ema_decay(ema_decay);
  ema_cadence.validate();
  DDPX_REQUIRE(ema_decay != 0 || (ema_cadence.every == 1 && ema_cadence.copy_epochs == 0 &&
                                  ema_adjust == EmaAdjust::none),
               "--ema-every, --ema-copy-epochs and --ema-adjust shape the weight average: give --ema-decay D too "
               "(torchvision's --model-ema --model-ema-decay D)");
  mix.validate();
}

}  // namespace ddpx
