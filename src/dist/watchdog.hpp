// CommWatchdog (--comm-timeout): turns a hung collective (a peer died or stalled) into a clear failure, from the
// process's first collective (communicator creation) to its last (the run report's gather).
// Guarantees:
//  - One thread per watchdog. arm(step, probe) starts the clock for one step's communication; the thread polls
//    probe() (every timeout/20, 10..200 ms) and stops watching once it reports completion or disarm() is called.
//    run_watched(what, collective) arms it around a blocking host-side collective (start-up, agreement,
//    broadcast, report gather): it returns what the collective returned, or throws the watchdog's error if the
//    watchdog fired meanwhile (a collective failing because the watchdog aborted it reports the timeout, not the
//    backend's error).
//  - If the watched communication is not complete `timeout` after arming, the thread writes
//    "ddpx: error: rank 2: communication timed out after 30 s in bucket 3 of step 17 (a peer rank probably died
//    or stalled)" ("in step 17" when the probe knows no bucket, as for a replayed CUDA graph; "in <what>" for
//    run_watched) to stderr and calls comm.abort() (once per watchdog; it stays fired). With a HeartbeatBoard the
//    parenthesis is replaced by the collective's number and what the board says about the other ranks: "in the
//    start-up agreement (collective #3): rank 2's process 4242 is stopped (state T: SIGSTOP or a debugger), last
//    in collective #2 (...)" (see heartbeat.hpp). On MPI abort() is MPI_Abort: mpirun ends every rank and exits
//    non-zero, so a killed or stalled rank ends the job within the timeout. On NCCL, ncclCommAbort makes the hung
//    kernels return and the next throw_if_fired() raises the message as ddpx::Error. On Gloo, abort() only marks the
//    communicator; the blocked call returns when Gloo's own timeout (also --comm-timeout in train) expires, and
//    the reducer then raises the watchdog's message.
//  - Before attach(comm) (communicator creation itself is watched) there is nothing to abort: the watchdog then
//    prints its message and ends the process with std::_Exit(3) (exit_status::comm_timeout). That and MPI_Abort are the library's only paths
//    that terminate a process; mpirun or ddpx's launcher then stops the other ranks.
//  - Every arm() and run_watched() is one collective on the board (entered, then completed when the probe
//    reports completion, disarm() or run_watched() returns).
//  - probe() runs on the watchdog thread under the watchdog's lock: it must be cheap and thread-safe
//    (atomics, cudaEventQuery). After disarm() returns, the probe is never called again.
//  - arm() for a new step replaces the step being watched and restarts the clock (the host may run ahead of the
//    GPU by a few steps: a queued step must not inherit an older step's deadline). A stall is still caught: the
//    host stops arming once it blocks on the stalled work (a sync, or a full launch queue), and `timeout` later
//    the watchdog fires.
//  - unbounded(): the watchdog of a component given no timeout (a Reducer built without one): it runs no thread and
//    never fires; arm() and disarm() do nothing and run_watched() runs the collective. A holder therefore always
//    has a watchdog and never asks whether it has one.
//  - struct CommProgress: bucket = -1 when unknown.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "dist/communicator.hpp"

namespace ddpx {

class HeartbeatBoard;

struct CommProgress {
  bool complete = false;
  int64_t bucket = -1;  // the first bucket not yet complete (for the message); -1: unknown
};

class CommWatchdog {
 public:
  CommWatchdog(Communicator& comm, std::chrono::milliseconds timeout, HeartbeatBoard* board = nullptr);
  // Before the communicator exists: `rank` names this process in messages; attach() the communicator later.
  CommWatchdog(int rank, std::chrono::milliseconds timeout, HeartbeatBoard* board = nullptr);
  ~CommWatchdog();
  // The process's one watchdog that never fires (see the guarantees above); thread-safe, lives as long as the program.
  static CommWatchdog& unbounded();
  CommWatchdog(const CommWatchdog&) = delete;
  CommWatchdog& operator=(const CommWatchdog&) = delete;

  void attach(Communicator& comm);
  void arm(int64_t step, std::function<CommProgress()> probe);
  void disarm();
  // Runs collective() with the clock running (see above). Not nestable, not concurrent with arm().
  void run_watched(std::string_view what, const std::function<void()>& collective);
  bool fired() const;
  std::string message() const;
  void throw_if_fired() const;  // ddpx::Error with message() once fired
  std::chrono::milliseconds timeout() const { return timeout_; }
  bool bounded() const { return bounded_; }  // false only for unbounded()

 private:
  struct Unbounded {};
  explicit CommWatchdog(Unbounded);
  void start_watching(std::string what, std::function<CommProgress()> probe);  // under mutex_
  void stop_watching();                                                       // under mutex_
  void watch();
  std::string describe_where(const CommProgress& progress) const;  // under mutex_
  Communicator* comm_ = nullptr;
  int rank_ = 0;
  const std::chrono::milliseconds timeout_;
  const bool bounded_ = true;  // false: no thread, never fires
  HeartbeatBoard* board_ = nullptr;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool armed_ = false;
  bool fired_ = false;
  int64_t step_ = -1;  // -1: a host collective named by what_
  std::string what_;
  std::chrono::steady_clock::time_point armed_at_;
  std::function<CommProgress()> probe_;
  std::string message_;
  std::thread thread_;
};

}  // namespace ddpx
