// CommWatchdog: a polling thread with a deadline per armed collective.
#include "dist/watchdog.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "core/error.hpp"
#include "core/exit_status.hpp"
#include "dist/heartbeat.hpp"

namespace ddpx {

CommWatchdog::CommWatchdog(Communicator& comm, std::chrono::milliseconds timeout, HeartbeatBoard* board)
    : CommWatchdog(comm.rank(), timeout, board) {
  attach(comm);  // under the lock: the thread is already running
}

CommWatchdog::CommWatchdog(int rank, std::chrono::milliseconds timeout, HeartbeatBoard* board)
    : rank_(rank), timeout_(timeout), board_(board) {
  DDPX_REQUIRE(timeout.count() > 0, "--comm-timeout must be positive, got {} ms", timeout.count());
  thread_ = std::thread([this] { watch(); });
}

CommWatchdog::CommWatchdog(Unbounded) : timeout_(std::chrono::milliseconds::max()), bounded_(false) {}

CommWatchdog& CommWatchdog::unbounded() {
  static CommWatchdog never_fires{Unbounded{}};
  return never_fires;
}

CommWatchdog::~CommWatchdog() {
  if (!bounded_) return;  // no thread
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void CommWatchdog::attach(Communicator& comm) {
  if (!bounded_) return;  // shared by every holder: it watches nothing
  std::lock_guard lock(mutex_);
  comm_ = &comm;
}

void CommWatchdog::start_watching(std::string what, std::function<CommProgress()> probe) {
  armed_ = true;
  what_ = std::move(what);
  armed_at_ = std::chrono::steady_clock::now();
  probe_ = std::move(probe);
  if (board_ && step_ >= 0) board_->enter_step(step_);
  if (board_ && step_ < 0) board_->enter(what_);
}

void CommWatchdog::stop_watching() {
  if (armed_ && board_) board_->complete();
  armed_ = false;
  probe_ = nullptr;
}

void CommWatchdog::arm(int64_t step, std::function<CommProgress()> probe) {
  if (!bounded_) return;
  {
    std::lock_guard lock(mutex_);
    step_ = step;
    start_watching("", std::move(probe));
  }
  wake_.notify_all();
}

void CommWatchdog::disarm() {
  if (!bounded_) return;
  std::lock_guard lock(mutex_);
  stop_watching();
}

void CommWatchdog::run_watched(std::string_view what, const std::function<void()>& collective) {
  if (!bounded_) return collective();
  throw_if_fired();
  {
    std::lock_guard lock(mutex_);
    step_ = -1;
    start_watching(std::string(what), [] { return CommProgress{}; });
  }
  wake_.notify_all();
  try {
    collective();
  } catch (...) {
    disarm();
    throw_if_fired();  // the collective failed because we aborted it: the timeout is the cause to report
    throw;
  }
  disarm();
  throw_if_fired();
}

bool CommWatchdog::fired() const {
  std::lock_guard lock(mutex_);
  return fired_;
}

std::string CommWatchdog::message() const {
  std::lock_guard lock(mutex_);
  return message_;
}

void CommWatchdog::throw_if_fired() const {
  std::lock_guard lock(mutex_);
  if (fired_) throw Error(message_);
}

std::string CommWatchdog::describe_where(const CommProgress& progress) const {
  if (step_ < 0) return what_;
  return progress.bucket >= 0 ? fmt::format("bucket {} of step {}", progress.bucket, step_)
                              : fmt::format("step {}", step_);
}

void CommWatchdog::watch() {
  const auto period = std::clamp(timeout_ / 20, std::chrono::milliseconds(10), std::chrono::milliseconds(200));
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait_for(lock, period, [this] { return stopping_; });
    if (stopping_) return;
    if (!armed_ || fired_) continue;
    // A host collective's probe never reports completion: run_watched() disarms when it returns.
    const CommProgress progress = step_ >= 0 ? probe_() : CommProgress{};
    if (progress.complete) {
      stop_watching();
      continue;
    }
    if (std::chrono::steady_clock::now() - armed_at_ < timeout_) continue;
    fired_ = true;
    armed_ = false;
    if (board_) board_->mark_timed_out();
    const std::string peers = board_ ? board_->describe_peers() : "";
    const std::string cause = peers.empty() ? " (a peer rank probably died or stalled)"
                                            : fmt::format(" (collective #{}): {}", board_->entered(), peers);
    message_ = fmt::format("rank {}: communication timed out after {:g} s in {}{}", rank_,
                           std::chrono::duration<double>(timeout_).count(), describe_where(progress), cause);
    std::string line = "ddpx: error: " + message_ + "\n";
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
    Communicator* comm = comm_;
    lock.unlock();
    if (comm == nullptr) std::_Exit(exit_status::comm_timeout);  // start-up: nothing to abort yet (see the header)
    comm->abort(message_);  // MPI: does not return
    lock.lock();
  }
}

}  // namespace ddpx
