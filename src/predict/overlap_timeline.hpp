// The overlapped step's communication timeline: buckets, in order, on one communication stream, each starting when
// it is ready and the stream is free, against a backward pass that runs from 0 to backward_ms.
// Guarantees:
//  - start_k = max(ready_k, end_{k-1}), end_k = start_k + duration_k; buckets never reorder or overlap each other.
//  - exposed_ms is the communication not covered by compute (torchtitan's overlap analyzer's definition): the
//    parts of the bucket intervals after backward_ms (compute is [0, backward_ms]; the optimizer waits for the
//    last bucket). So exposed = max(0, last end - backward_ms) whenever the stream is busy after backward ends.
//  - busy_ms = sum of durations; hidden_ms = busy_ms - exposed_ms.
#pragma once
#include <vector>

namespace ddpx::predict {

struct TimelineBucket {
  double ready_ms = 0;     // from backward start
  double duration_ms = 0;  // hook work plus its collectives
  double start_ms = 0, end_ms = 0;  // filled by simulate_overlap
};

struct OverlapResult {
  double comm_end_ms = 0;  // last bucket's end (0 without buckets)
  double busy_ms = 0;
  double exposed_ms = 0;
  double hidden_ms = 0;
};

// Fills start_ms/end_ms of every bucket. Ready times need not be sorted (a late-ready bucket waits, later ones
// queue behind it); durations and ready times must be finite and >= 0 (ddpx::Error otherwise).
OverlapResult simulate_overlap(std::vector<TimelineBucket>& buckets, double backward_ms);

}  // namespace ddpx::predict
