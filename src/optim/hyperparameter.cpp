// Shortest-decimal reading of float hyperparameters (see hyperparameter.hpp).
#include "optim/hyperparameter.hpp"

#include <fmt/format.h>

#include <string>

namespace ddpx {

double typed_decimal(float value) { return std::stod(fmt::format("{}", value)); }

}  // namespace ddpx
