// The clock offset estimator (dist/clock_offset.hpp) on synthetic round trips whose true offset is known, and the
// measurement over the self communicator. The multi-rank measurement runs in test_comm_mpi.cpp and
// test_comm_gloo.cpp (host_collective_checks.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "dist/clock_offset.hpp"
#include "dist/self_communicator.hpp"
#include "error_expect.hpp"

namespace ddpx {
namespace {

// A round trip of a collective both ranks are in for [enter, exit] on a common timeline; rank 0's clock reads
// that timeline, this rank's reads it minus `offset` (so offset = rank 0's clock - this rank's clock).
ClockSample round_trip(double offset, double local_enter, double local_exit, double root_enter, double root_exit) {
  return ClockSample{local_enter - offset, local_exit - offset, root_enter, root_exit};
}

TEST(ClockOffset, SymmetricRoundTripGivesTheExactOffset) {
  // Both ranks in the collective for the same 0.2 ms: the midpoint is exact, the uncertainty is the round trip.
  const ClockOffset o = estimate_clock_offset({round_trip(250.0, 10.0, 10.2, 10.0, 10.2)});
  EXPECT_NEAR(o.offset_ms, 250.0, 1e-9);
  EXPECT_NEAR(o.uncertainty_ms, 0.2, 1e-9);
  EXPECT_EQ(o.samples, 1);
}

TEST(ClockOffset, TheNarrowestRoundTripIsChosenAndTheTruthStaysInsideItsBound) {
  const double truth = -37.5;
  // A slow first round (a late peer), an asymmetric one, and a short one: the short one wins.
  const std::vector<ClockSample> samples = {
      round_trip(truth, 0.0, 5.0, 4.9, 5.0),    // this rank waited 5 ms for rank 0
      round_trip(truth, 6.0, 6.3, 6.0, 6.1),    // rank 0 left early
      round_trip(truth, 7.0, 7.05, 7.0, 7.05),  // 50 us each way
      round_trip(truth, 8.0, 8.4, 8.1, 8.4)};
  const ClockOffset o = estimate_clock_offset(samples);
  EXPECT_NEAR(o.uncertainty_ms, 0.05, 1e-9);
  EXPECT_LE(std::abs(o.offset_ms - truth), o.uncertainty_ms + 1e-12);
  EXPECT_EQ(o.samples, 4);
  // Every sample alone bounds the truth too (the bound is causal, not statistical).
  for (const ClockSample& s : samples) {
    const ClockOffset one = estimate_clock_offset({s});
    EXPECT_LE(std::abs(one.offset_ms - truth), one.uncertainty_ms + 1e-12);
  }
}

TEST(ClockOffset, AsymmetricDelayMovesTheEstimateButNotOutOfItsBound) {
  // Rank 0 entered late and this rank waited: the midpoint is off, the bound still holds.
  const double truth = 1000.0;
  const ClockOffset o = estimate_clock_offset({round_trip(truth, 0.0, 2.0, 1.9, 2.0)});
  EXPECT_GT(std::abs(o.offset_ms - truth), 0.1);
  EXPECT_LE(std::abs(o.offset_ms - truth), o.uncertainty_ms + 1e-12);
}

TEST(ClockOffset, BadSamplesAreRefusedWithTheRoundTripNamed) {
  testing::expect_error([] { estimate_clock_offset({}); }, {"no round trips"});
  testing::expect_error([] { estimate_clock_offset({ClockSample{1.0, 2.0, 0.0, 1.0}, ClockSample{5.0, 4.0, 0.0, 1.0}}); },
      {"round trip 1 runs backwards"});
  testing::expect_error([] { estimate_clock_offset({ClockSample{0.0, NAN, 0.0, 1.0}}); },
                                 {"must be monotonic"});
}

TEST(ClockOffset, RankZeroIsItsOwnReferenceOnTheSelfCommunicator) {
  SelfCommunicator comm;
  double fake_now = 0;
  const ClockOffset o = measure_clock_offset(comm, [&] { return fake_now += 1.0; }, 3);
  EXPECT_EQ(o.offset_ms, 0.0);
  EXPECT_EQ(o.uncertainty_ms, 0.0);
  EXPECT_EQ(o.samples, 3);
  EXPECT_EQ(fake_now, 6.0);  // enter and exit of each of the 3 rounds read the clock
  testing::expect_error([&] { measure_clock_offset(comm, [] { return 0.0; }, 0); }, {"rounds must be >= 1"});
}

}  // namespace
}  // namespace ddpx
