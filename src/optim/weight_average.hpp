// WeightAverage: an exponential moving average of the weights (--ema-decay D), torchvision's recipe
// (references/classification/utils.py ExponentialMovingAverage: torch.optim.swa_utils.AveragedModel with
// avg = D * avg + (1 - D) * param). The first update copies the weights (AveragedModel's n_averaged == 0); every
// later one blends, in fp32, with D and 1 - D as the Python floats torch multiplies by. restart() is train.py's
// n_averaged.fill_(0): the next update copies again (--ema-copy-epochs, optim/ema_cadence.hpp). D is the decay in
// use: --ema-decay's, or torchvision's adjustment of it (--ema-adjust), which may reach 0 (the average is the
// weights).
// Guarantees: update() after optimizer step s leaves exactly what AveragedModel.update_parameters() leaves
// (tests/optim/test_recipe_fixtures.cpp against tools/make_recipe_fixtures.py); the state (values and the number
// of updates) is what a checkpoint saves, so a resume continues bit for bit. Not thread-safe.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ddpx {

class WeightAverage {
 public:
  WeightAverage(double decay, size_t num_elements);
  void update(const float* params, size_t n);
  void restart() { updates_ = 0; }
  const std::vector<float>& values() const { return values_; }
  int64_t updates() const { return updates_; }
  double decay() const { return decay_; }
  // For checkpoint restore.
  void restore(std::vector<float> values, int64_t updates);

 private:
  double decay_;
  float keep_, blend_;  // fp32(D), fp32(1 - D)
  int64_t updates_ = 0;
  std::vector<float> values_;
};

// Throws ddpx::Error naming --ema-decay unless 0 < D < 1 (the flag; the decay in use may be 0, see above).
void validate_ema_decay(double decay);

}  // namespace ddpx
