// Exponential moving average of the weights (see weight_average.hpp).
#include "optim/weight_average.hpp"

#include <cmath>

#include "core/error.hpp"

namespace ddpx {

WeightAverage::WeightAverage(double decay, size_t num_elements)
    : decay_(decay),
      keep_(static_cast<float>(decay)),
      blend_(static_cast<float>(1.0 - decay)),
      values_(num_elements, 0.f) {
  DDPX_REQUIRE(std::isfinite(decay) && decay >= 0 && decay < 1, "the weight average's decay {} (from --ema-decay and "
               "--ema-adjust) must be in [0, 1)", decay);
}

void WeightAverage::update(const float* params, size_t n) {
  DDPX_REQUIRE(n == values_.size(), "WeightAverage::update: {} elements, sized for {}", n, values_.size());
  if (updates_ == 0) {
    for (size_t i = 0; i < n; ++i) values_[i] = params[i];
  } else {
    for (size_t i = 0; i < n; ++i) values_[i] = keep_ * values_[i] + blend_ * params[i];
  }
  ++updates_;
}

void WeightAverage::restore(std::vector<float> values, int64_t updates) {
  DDPX_REQUIRE(values.size() == values_.size() && updates >= 0,
               "the checkpoint's weight average has {} elements, this model {}", values.size(), values_.size());
  values_ = std::move(values);
  updates_ = updates;
}

void validate_ema_decay(double decay) {
  DDPX_REQUIRE(std::isfinite(decay) && decay > 0 && decay < 1,
               "--ema-decay must be in (0, 1) (the weight kept of the average each step, e.g. 0.999), got {}", decay);
}

}  // namespace ddpx
