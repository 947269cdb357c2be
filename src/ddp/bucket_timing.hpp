// BucketTiming: when one bucket of one synchronized step became ready, started and finished communicating.
// Times are milliseconds since begin_step() (CPU: steady_clock on the host; CUDA: events on the compute and
// communication streams, so they are GPU times). bytes = elements * 4 (the fp32 gradient span, padding included;
// what a hook puts on the wire depends on the hook).
#pragma once
#include <cstddef>

namespace ddpx {

struct BucketTiming {
  size_t bucket = 0;
  size_t elements = 0;
  size_t bytes = 0;
  double ready_ms = 0;  // launched: all of its gradients were final
  double start_ms = 0;  // the hook began (after the buckets before it)
  double end_ms = 0;    // the hook's result was in the bucket
};

}  // namespace ddpx
