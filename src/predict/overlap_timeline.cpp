// One communication stream against the backward pass (see overlap_timeline.hpp).
#include "predict/overlap_timeline.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace ddpx::predict {

OverlapResult simulate_overlap(std::vector<TimelineBucket>& buckets, double backward_ms) {
  DDPX_REQUIRE(std::isfinite(backward_ms) && backward_ms >= 0, "overlap: backward time {} ms is not a duration",
               backward_ms);
  OverlapResult result;
  double stream_free = 0;
  for (size_t k = 0; k < buckets.size(); ++k) {
    TimelineBucket& b = buckets[k];
    DDPX_REQUIRE(std::isfinite(b.ready_ms) && b.ready_ms >= 0 && std::isfinite(b.duration_ms) && b.duration_ms >= 0,
                 "overlap: bucket {} has ready time {} ms and duration {} ms; both must be finite and >= 0", k,
                 b.ready_ms, b.duration_ms);
    b.start_ms = std::max(b.ready_ms, stream_free);
    b.end_ms = b.start_ms + b.duration_ms;
    stream_free = b.end_ms;
    result.busy_ms += b.duration_ms;
    result.exposed_ms += std::max(0.0, b.end_ms - std::max(b.start_ms, backward_ms));
  }
  result.comm_end_ms = stream_free;
  result.hidden_ms = std::max(0.0, result.busy_ms - result.exposed_ms);
  return result;
}

}  // namespace ddpx::predict
