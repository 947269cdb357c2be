// Numeric comparisons for tests. Guarantees: max_abs_diff is the largest |a[i] - b[i]| (NaN when either holds a
// NaN there, so a NaN never passes a bound; a size mismatch is +inf); relative_error is ||got - want|| / ||want||
// (or / 1 when want is all zero), accumulated in double, and +inf as soon as got holds a NaN.
#pragma once
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace ddpx::testing {

template <typename A, typename B>
double max_abs_diff(const A* a, const B* b, size_t n) {
  double worst = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
    if (std::isnan(d)) return std::numeric_limits<double>::quiet_NaN();
    if (d > worst) worst = d;
  }
  return worst;
}

template <typename A, typename B>
double max_abs_diff(const std::vector<A>& a, const std::vector<B>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  return max_abs_diff(a.data(), b.data(), a.size());
}

template <typename A, typename B>
double relative_error(const A* got, const B* want, size_t n) {
  double diff = 0, ref = 0;
  for (size_t i = 0; i < n; ++i) {
    const double g = static_cast<double>(got[i]), w = static_cast<double>(want[i]);
    if (std::isnan(g)) return std::numeric_limits<double>::infinity();
    diff += (g - w) * (g - w);
    ref += w * w;
  }
  return std::sqrt(diff / (ref > 0 ? ref : 1.0));
}

template <typename A, typename B>
double relative_error(const std::vector<A>& got, const std::vector<B>& want) {
  if (got.size() != want.size()) return std::numeric_limits<double>::infinity();
  return relative_error(got.data(), want.data(), got.size());
}

}  // namespace ddpx::testing
