// ReducerPort: the verbs the training loop uses of gradient reduction, and nothing else (the shape of Megatron's
// start_grad_sync/finish_grad_sync): implemented over ddp's Reducer (a run with a communicator) and by a port that
// reduces nothing (a single process without --ddp). The step runner calls every verb at the same points either
// way; what each does is the port's business, so the loop holds no `if (reducer)`. attach_reducer()
// (train/dist_setup.hpp) makes the port a run needs; a port over a Reducer owns it.
// Guarantees (over a Reducer): the calls keep ddp/reducer.hpp's sequence rules and messages; every synchronized
// step begun passes the test fault point of its number (core/test_fault.hpp); finish() throws the watchdog's
// message once it has fired. Without a reducer: nothing is communicated, and a final span of a synchronized
// micro-batch goes straight to the optimizer when it overlaps backward (a rank alone has nothing to average, so
// final is reduced: Note [Optimizer overlapped with backward], train/step_engine.hpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ddp/bucket_timing.hpp"

namespace ddpx {

class CommWatchdog;
class Reducer;
class StepEngine;

class ReducerPort {
 public:
  virtual ~ReducerPort() = default;
  // One micro-batch: begin() before its forward, mark_ready() for each final span of its backward (buffer order),
  // finish() after it (CUDA: the compute stream then waits for the averages; no host synchronization).
  // sync=false: an accumulation micro-batch, which communicates nothing.
  virtual void begin(bool sync, void* compute_stream) = 0;
  virtual void mark_ready(size_t begin, size_t end) = 0;
  virtual void finish() = 0;
  // A calibration step's reduction (Note [Calibration steps], train/calibration.hpp): one synchronized step over
  // the whole buffer after a backward that marked nothing, without the after-reduce optimizer updates (the caller
  // runs the optimizer over the buffer).
  virtual void reduce_whole_buffer(void* compute_stream) = 0;
  // Around a CUDA graph replay of a whole captured step (Reducer::before_replay/after_replay).
  virtual void before_replay() = 0;
  virtual void after_replay(void* compute_stream) = 0;
  // Whether the next steps (or the graph captured or replayed next) record bucket ready times.
  virtual void record_ready_times(bool on) = 0;
  // The first synchronized step (counted from 0) from which a whole step may be captured into a CUDA graph:
  // the hook's CommHook::capturable_from_step() (kNeverCapturable: never); 0 without a reducer.
  virtual int64_t capturable_from_step() const = 0;
  // Per bucket of the last synchronized step (Reducer::bucket_timings; CUDA: waits for that step's events); empty
  // without a reducer.
  virtual std::vector<BucketTiming> bucket_timings() = 0;
  // The start-up line's DDP part ("NCCL, 2 rank(s), 13 bucket(s), hook bf16, overlapped with backward"); "" without
  // a reducer.
  virtual std::string describe() const = 0;
};

// Over a Reducer on a gradient buffer of buffer_elems elements, which the port owns (the watchdog, the reducer's
// communicator and its gradient buffer must outlive the port). description: what describe() says.
std::unique_ptr<ReducerPort> make_reducer_port(std::unique_ptr<Reducer> reducer, size_t buffer_elems,
                                               CommWatchdog& watchdog, std::string description);
// Without one. span_updates: the optimizer overlaps backward (optimizer_overlaps()), so the final spans of a
// synchronized micro-batch go to engine.optimizer_span as they come.
std::unique_ptr<ReducerPort> make_no_reducer_port(StepEngine& engine, bool span_updates);

}  // namespace ddpx
