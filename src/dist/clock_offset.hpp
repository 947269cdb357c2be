// Clock offset to rank 0: how far each rank's clock is from rank 0's, measured with a few host collectives at
// start, so that every rank's trace can be written on rank 0's clock. See Note [One clock for all ranks]
// (docs/design.md).
// Guarantees:
//  - One sample is one host collective (all_gather_host) bracketed by the caller's clock on every rank. Because a
//    collective cannot complete on any rank before every rank has entered it, rank 0's exit follows rank r's
//    entry and rank r's exit follows rank 0's entry. The offset (rank 0's clock minus rank r's) therefore lies in
//    [root_enter - local_exit, root_exit - local_enter] for every sample: a hard bound, whatever the backend, the
//    staging through device memory or the scheduling. The estimate is that interval's midpoint for the sample
//    with the narrowest interval (the shortest round trip, as NTP picks its sample), and the uncertainty is its
//    half width: |true offset - offset_ms| <= uncertainty_ms as long as neither clock drifts during the samples.
//  - Rank 0's own offset is exactly 0 with uncertainty 0.
//  - Works on every Communicator (self, MPI, Gloo, NCCL) through dist/host_collectives.hpp; it adds no
//    transport. Every rank calls it together (it is rounds + 1 collectives); it never runs inside a step.
#pragma once
#include <functional>
#include <vector>

#include "dist/communicator.hpp"

namespace ddpx {

// One round trip as both ends saw it, in milliseconds: local_* on this rank's clock, root_* on rank 0's.
struct ClockSample {
  double local_enter_ms = 0, local_exit_ms = 0;
  double root_enter_ms = 0, root_exit_ms = 0;
};

struct ClockOffset {
  double offset_ms = 0;       // add to a time on this rank's clock to get the time on rank 0's clock
  double uncertainty_ms = 0;  // half width of the interval the true offset is known to lie in
  int samples = 0;            // round trips measured (0: not measured, e.g. a single process)
};

// The offset from samples (pure; unit-tested on synthetic round trips). Throws ddpx::Error when there are no
// samples or a sample runs backwards (an exit before its entry: the clock given was not monotonic).
ClockOffset estimate_clock_offset(const std::vector<ClockSample>& samples);

// Measures this rank's offset to rank 0 with `rounds` samples (rounds + 1 host collectives, every rank together).
// now_ms: this rank's clock (monotonic, milliseconds); the result converts it to rank 0's now_ms.
ClockOffset measure_clock_offset(Communicator& comm, const std::function<double()>& now_ms, int rounds = 8);

}  // namespace ddpx
