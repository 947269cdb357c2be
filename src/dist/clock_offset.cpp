// Clock offset to rank 0 from round trips through host collectives (see clock_offset.hpp).
#include "dist/clock_offset.hpp"

#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "dist/host_collectives.hpp"

namespace ddpx {

ClockOffset estimate_clock_offset(const std::vector<ClockSample>& samples) {
  DDPX_REQUIRE(!samples.empty(), "clock offset: no round trips to estimate from (internal: measure at least one)");
  ClockOffset best;
  double best_width = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < samples.size(); ++i) {
    const ClockSample& s = samples[i];
    DDPX_REQUIRE(std::isfinite(s.local_enter_ms) && std::isfinite(s.local_exit_ms) &&
                     std::isfinite(s.root_enter_ms) && std::isfinite(s.root_exit_ms) &&
                     s.local_exit_ms >= s.local_enter_ms && s.root_exit_ms >= s.root_enter_ms,
                 "clock offset: round trip {} runs backwards or is not finite (this rank {} -> {} ms, rank 0 {} -> {} "
                 "ms); the clock must be monotonic",
                 i, s.local_enter_ms, s.local_exit_ms, s.root_enter_ms, s.root_exit_ms);
    // Rank 0 entered before this rank left, and this rank entered before rank 0 left.
    const double lower = s.root_enter_ms - s.local_exit_ms;
    const double upper = s.root_exit_ms - s.local_enter_ms;
    const double width = upper - lower;  // both round trips together, never negative
    if (width < best_width) {
      best_width = width;
      best.offset_ms = (lower + upper) / 2;
      best.uncertainty_ms = width / 2;
    }
  }
  best.samples = static_cast<int>(samples.size());
  return best;
}

ClockOffset measure_clock_offset(Communicator& comm, const std::function<double()>& now_ms, int rounds) {
  DDPX_REQUIRE(rounds >= 1, "clock offset: rounds must be >= 1, got {}", rounds);
  const int world = comm.size();
  // [enter, exit] of every round on this rank's clock, then every rank's in one gather.
  std::vector<double> mine(2 * static_cast<size_t>(rounds));
  const char token = 0;
  std::vector<char> tokens(static_cast<size_t>(world));
  for (int r = 0; r < rounds; ++r) {
    mine[2 * r] = now_ms();
    all_gather_host(comm, &token, tokens.data(), 1);
    mine[2 * r + 1] = now_ms();
  }
  std::vector<double> all(mine.size() * static_cast<size_t>(world));
  all_gather_host(comm, mine.data(), all.data(), mine.size() * sizeof(double));
  if (comm.rank() == 0) return ClockOffset{0, 0, rounds};
  std::vector<ClockSample> samples(static_cast<size_t>(rounds));
  const double* root = all.data();
  for (int r = 0; r < rounds; ++r)
    samples[r] = ClockSample{mine[2 * r], mine[2 * r + 1], root[2 * r], root[2 * r + 1]};
  return estimate_clock_offset(samples);
}

}  // namespace ddpx
