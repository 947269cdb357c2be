// Medians and spreads of step figures (see spread.hpp).
#include "analysis/spread.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace ddpx {

double median_of(std::vector<double> values) {
  DDPX_REQUIRE(!values.empty(), "median of an empty set of values: a rank recorded no steps");
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + mid);
  return 0.5 * (lower + upper);
}

Spread spread_of(const std::vector<double>& values) {
  DDPX_REQUIRE(!values.empty(), "spread of an empty set of values: a rank recorded no steps");
  auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  return Spread{*lo, median_of(values), *hi};
}

}  // namespace ddpx
