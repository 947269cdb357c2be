// CommWatchdog: a polling thread with a deadline per armed step.
#include "dist/watchdog.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "core/error.hpp"

namespace ddpx {

CommWatchdog::CommWatchdog(Communicator& comm, std::chrono::milliseconds timeout) : comm_(comm), timeout_(timeout) {
  DDPX_REQUIRE(timeout.count() > 0, "--comm-timeout must be positive, got {} ms", timeout.count());
  thread_ = std::thread([this] { watch(); });
}

CommWatchdog::~CommWatchdog() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void CommWatchdog::arm(int64_t step, std::function<CommProgress()> probe) {
  {
    std::lock_guard lock(mutex_);
    armed_ = true;
    step_ = step;
    armed_at_ = std::chrono::steady_clock::now();
    probe_ = std::move(probe);
  }
  wake_.notify_all();
}

void CommWatchdog::disarm() {
  std::lock_guard lock(mutex_);
  armed_ = false;
  probe_ = nullptr;
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

void CommWatchdog::watch() {
  const auto period = std::clamp(timeout_ / 20, std::chrono::milliseconds(10), std::chrono::milliseconds(200));
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait_for(lock, period, [this] { return stopping_; });
    if (stopping_) return;
    if (!armed_ || fired_) continue;
    CommProgress progress = probe_();
    if (progress.complete) {
      armed_ = false;
      probe_ = nullptr;
      continue;
    }
    if (std::chrono::steady_clock::now() - armed_at_ < timeout_) continue;
    fired_ = true;
    armed_ = false;
    const std::string where = progress.bucket >= 0 ? fmt::format("bucket {} of step {}", progress.bucket, step_)
                                                   : fmt::format("step {}", step_);
    message_ = fmt::format("rank {}: communication timed out after {:g} s in {} (a peer rank probably died or "
                           "stalled)",
                           comm_.rank(), std::chrono::duration<double>(timeout_).count(), where);
    std::string line = "ddpx: error: " + message_ + "\n";
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
    lock.unlock();
    comm_.abort(message_);  // MPI: does not return
    lock.lock();
  }
}

}  // namespace ddpx
