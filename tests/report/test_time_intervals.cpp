// Interval arithmetic (report/time_intervals.hpp) on hand-made intervals: unions merge overlapping and touching
// intervals in any order, exposed (uncovered) and hidden (covered) communication add up to the communication's
// union, and bucket records use the same definition (gaps between buckets are not communication).
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "report/step_record.hpp"
#include "report/time_intervals.hpp"

namespace ddpx {
namespace {

TEST(TimeIntervals, UnionMergesOverlappingAndTouchingIntervalsInAnyOrder) {
  const std::vector<TimeInterval> expected = {{0, 4}, {5, 9}, {10, 11}};
  std::vector<TimeInterval> input = {{6, 9}, {0, 2}, {1, 3}, {10, 11}, {3, 4}, {5, 7}, {8, 8}, {12, 11}};
  EXPECT_EQ(union_of(input), expected);
  std::reverse(input.begin(), input.end());
  EXPECT_EQ(union_of(input), expected);
  EXPECT_DOUBLE_EQ(union_ms(input), 4 + 4 + 1);
  EXPECT_TRUE(union_of({}).empty());
  EXPECT_DOUBLE_EQ(union_ms({{2, 2}, {5, 1}}), 0.0);  // empty and reversed intervals count nothing
}

TEST(TimeIntervals, UncoveredCommIsCommMinusTheUnionOfCompute) {
  // compute: [0, 10) and [12, 20), given overlapping and out of order
  const std::vector<TimeInterval> compute = {{12, 20}, {0, 6}, {4, 10}};
  // comm: [8, 14) overlaps both compute intervals and the gap [10, 12); [18, 25) runs past compute's end;
  // [9, 11) overlaps the first comm interval (counted once)
  const std::vector<TimeInterval> comm = {{18, 25}, {8, 14}, {9, 11}};
  EXPECT_DOUBLE_EQ(union_ms(comm), 6 + 7);
  EXPECT_DOUBLE_EQ(uncovered_ms(comm, compute), 2 + 5);  // [10, 12) and [20, 25)
  EXPECT_DOUBLE_EQ(covered_ms(comm, compute), 2 + 2 + 2);  // [8, 10), [12, 14), [18, 20)
  EXPECT_DOUBLE_EQ(uncovered_ms(comm, compute) + covered_ms(comm, compute), union_ms(comm));
}

TEST(TimeIntervals, NoComputeExposesEverythingAndFullCoverHidesEverything) {
  const std::vector<TimeInterval> comm = {{1, 3}, {5, 6}};
  EXPECT_DOUBLE_EQ(uncovered_ms(comm, {}), 3.0);
  EXPECT_DOUBLE_EQ(covered_ms(comm, {}), 0.0);
  EXPECT_DOUBLE_EQ(uncovered_ms(comm, {{0, 10}}), 0.0);
  EXPECT_DOUBLE_EQ(covered_ms(comm, {{0, 10}}), 3.0);
  EXPECT_DOUBLE_EQ(uncovered_ms({}, {{0, 10}}), 0.0);
  // compute touching comm at an end point covers nothing of it
  EXPECT_DOUBLE_EQ(uncovered_ms({{3, 5}}, {{0, 3}, {5, 9}}), 2.0);
}

TEST(TimeIntervals, ManyIntervalsAgreeWithAFineGrid) {
  // A brute-force check on a 0.5 ms grid: every cell counts as comm / compute when an interval holds it.
  std::vector<TimeInterval> comm, compute;
  for (int k = 0; k < 40; ++k) {
    comm.push_back({static_cast<double>((k * 7) % 50), static_cast<double>((k * 7) % 50 + 1 + k % 3)});
    compute.push_back({static_cast<double>((k * 11) % 60), static_cast<double>((k * 11) % 60 + k % 4)});
  }
  auto holds = [](const std::vector<TimeInterval>& set, double t) {
    return std::any_of(set.begin(), set.end(), [t](const TimeInterval& i) { return i.begin_ms <= t && t < i.end_ms; });
  };
  double uncovered = 0, covered = 0;
  for (double t = 0.25; t < 70; t += 0.5) {
    if (!holds(comm, t)) continue;
    (holds(compute, t) ? covered : uncovered) += 0.5;
  }
  EXPECT_DOUBLE_EQ(uncovered_ms(comm, compute), uncovered);
  EXPECT_DOUBLE_EQ(covered_ms(comm, compute), covered);
}

BucketRecord bucket(double start, double end) {
  BucketRecord b;
  b.bytes = 4;
  b.launch_ms = start;
  b.start_ms = start;
  b.end_ms = end;
  return b;
}

TEST(TimeIntervals, BucketGapsAfterBackwardAreNotExposedCommunication) {
  // Backward ends at 35; buckets run [36, 37) and [39, 40): 2 ms of communication outside compute, not the 5 ms
  // from the backward's end to the last bucket's end (nothing communicates in [35, 36) and [37, 39)).
  const std::vector<BucketRecord> buckets = {bucket(20, 30), bucket(36, 37), bucket(39, 40)};
  EXPECT_DOUBLE_EQ(exposed_comm_ms(buckets, 35.0), 2.0);
  EXPECT_DOUBLE_EQ(covered_ms(comm_intervals(buckets), {{0, 35}}), 10.0);
  // Two compute intervals (backward, then an optimizer from 38): [39, 40) is covered as well.
  EXPECT_DOUBLE_EQ(exposed_comm_ms(buckets, std::vector<TimeInterval>{{0, 35}, {38, 45}}), 1.0);
}

}  // namespace
}  // namespace ddpx
