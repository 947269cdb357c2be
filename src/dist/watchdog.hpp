// CommWatchdog (--comm-timeout): turns a hung collective (a peer died or stalled) into a clear failure.
// Guarantees:
//  - One thread per watchdog. arm(step, probe) starts the clock for one step's communication; the thread polls
//    probe() (every timeout/20, 10..200 ms) and stops watching once it reports completion or disarm() is called.
//  - If the step's communication is not complete `timeout` after arm(), the thread writes
//    "ddpx: error: rank 2: communication timed out after 30 s in bucket 3 of step 17 (a peer rank probably died
//    or stalled)" ("in step 17" when the probe knows no bucket, as for a replayed CUDA graph) to stderr and calls
//    comm.abort() (once per watchdog; it stays fired). On MPI that is MPI_Abort: mpirun ends every rank and exits
//    non-zero, so a killed or stalled rank ends the job within the timeout. On NCCL, ncclCommAbort makes the
//    hung kernels return and the next throw_if_fired() (the reducer calls it) raises the message as ddpx::Error.
//    On Gloo, abort() only marks the communicator; the blocked call returns when Gloo's own timeout (also
//    --comm-timeout in train) expires, and the reducer then raises the watchdog's message.
//  - probe() runs on the watchdog thread under the watchdog's lock: it must be cheap and thread-safe
//    (atomics, cudaEventQuery). After disarm() returns, the probe is never called again.
//  - arm() for a new step replaces the step being watched and restarts the clock (the host may run ahead of the
//    GPU by a few steps: a queued step must not inherit an older step's deadline). A stall is still caught: the
//    host stops arming once it blocks on the stalled work (a sync, or a full launch queue), and `timeout` later
//    the watchdog fires.
//  - struct CommProgress: bucket = -1 when unknown.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "dist/communicator.hpp"

namespace ddpx {

struct CommProgress {
  bool complete = false;
  int64_t bucket = -1;  // the first bucket not yet complete (for the message); -1: unknown
};

class CommWatchdog {
 public:
  CommWatchdog(Communicator& comm, std::chrono::milliseconds timeout);
  ~CommWatchdog();
  CommWatchdog(const CommWatchdog&) = delete;
  CommWatchdog& operator=(const CommWatchdog&) = delete;

  void arm(int64_t step, std::function<CommProgress()> probe);
  void disarm();
  bool fired() const;
  std::string message() const;
  void throw_if_fired() const;  // ddpx::Error with message() once fired
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  void watch();
  Communicator& comm_;
  const std::chrono::milliseconds timeout_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool armed_ = false;
  bool fired_ = false;
  int64_t step_ = 0;
  std::chrono::steady_clock::time_point armed_at_;
  std::function<CommProgress()> probe_;
  std::string message_;
  std::thread thread_;
};

}  // namespace ddpx
