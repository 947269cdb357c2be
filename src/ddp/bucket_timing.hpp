// BucketTiming: when one bucket of one synchronized step became ready, started and finished communicating.
// Times are milliseconds since begin_step() (CPU: steady_clock on the host; CUDA: events on the compute and
// communication streams, so they are GPU times). bytes = what the hook handed to its collectives for the bucket
// (CommHook::wire_bytes: the fp32 span for allreduce, half of it for fp16/bf16, PowerSGD's factors and vectors
// once it compresses), so bus bandwidth is computed from what crossed the link.
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
