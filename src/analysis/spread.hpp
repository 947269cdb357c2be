// Spread: the min / median / max summary every analysis of step records uses (the breakdown per rank and across
// ranks, DDP's cost). Its own header so the breakdown and DDP's cost can both use it without including each other.
// Guarantees: median_of is the middle value, or the mean of the two middle values of an even count; both functions
// throw ddpx::Error on an empty set (a rank that recorded no steps).
#pragma once
#include <vector>

namespace ddpx {

struct Spread {
  double min = 0, median = 0, max = 0;
};

// Median of values (mean of the two middle ones for an even count). Throws ddpx::Error when empty.
double median_of(std::vector<double> values);
// min / median / max of values. Throws ddpx::Error when empty.
Spread spread_of(const std::vector<double>& values);

}  // namespace ddpx
