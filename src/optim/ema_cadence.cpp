// The weight average's cadence (see ema_cadence.hpp).
#include "optim/ema_cadence.hpp"

#include <algorithm>
#include <string_view>

#include "core/error.hpp"

namespace ddpx {
namespace {

// The epoch of step `step`'s first micro-batch, and the index of the step in that epoch.
struct StepInEpoch {
  int64_t epoch = 0, index = 0;
};

StepInEpoch step_in_epoch(const EmaCadence& c, int64_t step) {
  if (c.micro_batches_per_epoch <= 0) return {0, step - 1};
  const int64_t first_micro = (step - 1) * c.micro_batches_per_step;
  const int64_t epoch = first_micro / c.micro_batches_per_epoch;
  // The epoch's first step: the first whose first micro-batch lies in it.
  const int64_t epoch_first_step0 =
      (epoch * c.micro_batches_per_epoch + c.micro_batches_per_step - 1) / c.micro_batches_per_step;
  return {epoch, step - 1 - epoch_first_step0};
}

}  // namespace

bool EmaCadence::updates_at(int64_t step) const { return step_in_epoch(*this, step).index % every == 0; }

bool EmaCadence::copies_at(int64_t step) const {
  return copy_epochs > 0 && micro_batches_per_epoch > 0 && step_in_epoch(*this, step).epoch < copy_epochs;
}

void EmaCadence::validate() const {
  DDPX_REQUIRE(every >= 1, "--ema-every {}: update the average every N >= 1 optimizer steps of an epoch "
               "(torchvision's --model-ema-steps)", every);
  DDPX_REQUIRE(copy_epochs >= 0, "--ema-copy-epochs {}: give a number of epochs >= 0 (0: average from the first "
               "update)", copy_epochs);
}

EmaAdjust parse_ema_adjust(std::string_view text) {
  if (text == "none") return EmaAdjust::none;
  DDPX_REQUIRE(text == "torchvision",
               "unknown --ema-adjust '{}'; choose none (use --ema-decay as given) or torchvision (1 - (1 - D) x world "
               "x batch x --ema-every / --epochs, torchvision's train.py)", text);
  return EmaAdjust::torchvision;
}

const char* ema_adjust_name(EmaAdjust adjust) { return adjust == EmaAdjust::torchvision ? "torchvision" : "none"; }

double torchvision_ema_decay(double decay, int64_t world, int64_t batch, int64_t every, int64_t epochs) {
  // Python: adjust = world * batch * steps / epochs (an int product, true division); alpha = 1.0 - decay;
  // alpha = min(1.0, alpha * adjust); decay = 1.0 - alpha.
  const double adjust = static_cast<double>(world * batch * every) / static_cast<double>(epochs);
  const double alpha = std::min(1.0, (1.0 - decay) * adjust);
  return 1.0 - alpha;
}

}  // namespace ddpx
