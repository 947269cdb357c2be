// Interval unions and overlaps (see time_intervals.hpp).
#include "report/time_intervals.hpp"

#include <algorithm>

namespace ddpx {

std::vector<TimeInterval> union_of(std::vector<TimeInterval> intervals) {
  std::erase_if(intervals, [](const TimeInterval& i) { return i.length_ms() <= 0; });
  std::sort(intervals.begin(), intervals.end(),
            [](const TimeInterval& a, const TimeInterval& b) { return a.begin_ms < b.begin_ms; });
  std::vector<TimeInterval> merged;
  for (const TimeInterval& i : intervals) {
    if (!merged.empty() && i.begin_ms <= merged.back().end_ms) {
      merged.back().end_ms = std::max(merged.back().end_ms, i.end_ms);
    } else {
      merged.push_back(i);
    }
  }
  return merged;
}

double union_ms(const std::vector<TimeInterval>& intervals) {
  double total = 0;
  for (const TimeInterval& i : union_of(intervals)) total += i.length_ms();
  return total;
}

double covered_ms(const std::vector<TimeInterval>& comm, const std::vector<TimeInterval>& compute) {
  const std::vector<TimeInterval> a = union_of(comm), b = union_of(compute);
  // Both are sorted and disjoint: one sweep sums the pairwise intersections.
  double covered = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const double begin = std::max(a[i].begin_ms, b[j].begin_ms);
    const double end = std::min(a[i].end_ms, b[j].end_ms);
    if (end > begin) covered += end - begin;
    if (a[i].end_ms < b[j].end_ms) {
      ++i;
    } else {
      ++j;
    }
  }
  return covered;
}

double uncovered_ms(const std::vector<TimeInterval>& comm, const std::vector<TimeInterval>& compute) {
  return std::max(0.0, union_ms(comm) - covered_ms(comm, compute));
}

}  // namespace ddpx
