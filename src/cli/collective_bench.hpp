// Measuring one all-reduce size the way nccl-tests does, on whatever memory the communicator uses.
// Guarantees:
//  - One buffer of max_bytes lives in the communicator's memory (device memory for NCCL, on the current device;
//    host memory otherwise) for the bench's lifetime; NCCL work goes to the bench's own non-blocking stream.
//  - measure(): `warmup` untimed in-place sums, a barrier, then `iters` timed sums (CUDA events on the stream for
//    NCCL, steady_clock for host backends, where each call returns when done); the data is all zeros while timed
//    so repeated sums stay finite in every dtype. Then a check: every rank fills the buffer with rank + 1, one sum,
//    and every element must equal n(n + 1) / 2 exactly (exact in f32, f16 and bf16 for the world sizes ddpx runs).
//  - The time and the wrong-element count are the maximum over ranks (the slowest rank decides, every rank gets
//    the same numbers). Every rank must call measure() with the same arguments in the same order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "dist/communicator.hpp"

namespace ddpx::cli {

struct CollectiveTiming {
  double time_ms = 0;  // mean over the timed iterations, slowest rank
  int64_t wrong = 0;   // elements that differed from the expected sum, worst rank
};

class AllreduceBench {
 public:
  AllreduceBench(Communicator& comm, size_t max_bytes);
  ~AllreduceBench();
  AllreduceBench(const AllreduceBench&) = delete;
  AllreduceBench& operator=(const AllreduceBench&) = delete;

  // count elements of dtype (count * size <= max_bytes).
  CollectiveTiming measure(size_t count, CommDType dtype, int warmup, int iters);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Writes `value` (converted to dtype: f32, f16 or bf16) into count elements at data.
void fill_elements(void* data, size_t count, CommDType dtype, float value);
// How many of the count elements at data differ from `expected` (compared after converting to float).
int64_t count_differing(const void* data, size_t count, CommDType dtype, float expected);

}  // namespace ddpx::cli
