// Measuring one all-reduce size the way nccl-tests does, on whatever memory the communicator uses.
// Guarantees:
//  - Two buffers of max_bytes (input and output) live in the communicator's memory (device memory for NCCL, on the
//    current device; host memory otherwise) for the bench's lifetime; NCCL work goes to the bench's own
//    non-blocking stream.
//  - measure(): `warmup` untimed sums, a barrier, then `iters` timed sums (CUDA events on the stream for NCCL,
//    steady_clock for host backends, where each call returns when done), in place (input to input) or out of place
//    (input to output, as nccl-tests' out-of-place column); the data is all zeros while timed so repeated sums stay
//    finite in every dtype. Then a check: every rank fills the input with rank + 1, one sum the same way, and every
//    element of the result must equal n(n + 1) / 2 exactly (exact in f32, f16 and bf16 for the world sizes ddpx
//    runs).
//  - Every rank gets every rank's mean time (index = rank) and the wrong elements summed over ranks; how the times
//    are combined is the caller's choice (nccl-tests' -a). Every rank must call measure() and gather_text() with
//    the same arguments in the same order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dist/communicator.hpp"

namespace ddpx::cli {

struct CollectiveTiming {
  std::vector<double> rank_time_ms;  // per rank (index = rank): mean over the timed iterations
  int64_t wrong = 0;                 // elements that differed from the expected sum, summed over ranks
};

// The device this rank measures on: CUDA index, PCI bus id ("0000:19:00") and name; index -1 on the CPU.
struct BenchDevice {
  int index = -1;
  std::string bus_id;
  std::string name;
};

class AllreduceBench {
 public:
  AllreduceBench(Communicator& comm, size_t max_bytes);
  ~AllreduceBench();
  AllreduceBench(const AllreduceBench&) = delete;
  AllreduceBench& operator=(const AllreduceBench&) = delete;

  // count elements of dtype (count * size <= max_bytes).
  CollectiveTiming measure(size_t count, CommDType dtype, int warmup, int iters, bool in_place);
  // Every rank's text (index = rank), each cut to 255 bytes; a collective over the communicator.
  std::vector<std::string> gather_text(const std::string& mine);
  BenchDevice device() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Writes `value` (converted to dtype: f32, f16 or bf16) into count elements at data.
void fill_elements(void* data, size_t count, CommDType dtype, float value);
// How many of the count elements at data differ from `expected` (compared after converting to float).
int64_t count_differing(const void* data, size_t count, CommDType dtype, float expected);

}  // namespace ddpx::cli
