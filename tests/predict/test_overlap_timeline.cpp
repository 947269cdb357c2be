// predict/overlap_timeline: one communication stream against the backward pass, on synthetic bucket timelines:
// fully hidden, fully exposed, partly exposed, and a late bucket that holds up the ones behind it.
#include <gtest/gtest.h>

#include "error_expect.hpp"
#include "predict/overlap_timeline.hpp"

namespace ddpx::predict {
namespace {

TEST(OverlapTimeline, BucketsThatFinishInsideBackwardAreHidden) {
  std::vector<TimelineBucket> b{{20, 10}, {50, 10}, {80, 10}};
  const OverlapResult r = simulate_overlap(b, 100);
  EXPECT_DOUBLE_EQ(r.exposed_ms, 0);
  EXPECT_DOUBLE_EQ(r.busy_ms, 30);
  EXPECT_DOUBLE_EQ(r.hidden_ms, 30);
  EXPECT_DOUBLE_EQ(r.comm_end_ms, 90);
  EXPECT_DOUBLE_EQ(b[1].start_ms, 50);
}

TEST(OverlapTimeline, OneBucketAfterBackwardIsAllExposed) {
  std::vector<TimelineBucket> b{{100, 40}};
  const OverlapResult r = simulate_overlap(b, 100);
  EXPECT_DOUBLE_EQ(r.exposed_ms, 40);
  EXPECT_DOUBLE_EQ(r.hidden_ms, 0);
  EXPECT_DOUBLE_EQ(r.comm_end_ms, 140);
}

TEST(OverlapTimeline, QueuedBucketsArePartlyExposed) {
  // Bucket 1 is ready at 60 but the stream is busy until 90: it runs 90..120, 20 ms past backward's end.
  std::vector<TimelineBucket> b{{50, 40}, {60, 30}};
  const OverlapResult r = simulate_overlap(b, 100);
  EXPECT_DOUBLE_EQ(b[1].start_ms, 90);
  EXPECT_DOUBLE_EQ(b[1].end_ms, 120);
  EXPECT_DOUBLE_EQ(r.exposed_ms, 20);
  EXPECT_DOUBLE_EQ(r.busy_ms, 70);
  EXPECT_DOUBLE_EQ(r.hidden_ms, 50);
}

TEST(OverlapTimeline, ALateBucketHoldsUpTheOnesBehindIt) {
  // In order on one stream: bucket 1, ready at 10, waits for bucket 0 (ready at 95); only 1 ms of 10 is hidden.
  std::vector<TimelineBucket> b{{95, 6}, {10, 5}};
  const OverlapResult r = simulate_overlap(b, 100);
  EXPECT_DOUBLE_EQ(b[1].start_ms, 101);
  EXPECT_DOUBLE_EQ(r.exposed_ms, 1 + 5);
  EXPECT_DOUBLE_EQ(r.comm_end_ms, 106);
}

TEST(OverlapTimeline, NonsenseTimesAreRefused) {
  std::vector<TimelineBucket> b{{10, -1}};
  testing::expect_error([&] { (void)simulate_overlap(b, 100); }, {"bucket 0", "duration -1"});
  std::vector<TimelineBucket> none;
  testing::expect_error([&] { (void)simulate_overlap(none, -5); }, {"backward time -5"});
}

}  // namespace
}  // namespace ddpx::predict
