// Host launcher: a communication thread that runs hooks in FIFO order; steady_clock timings.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

#include "core/error.hpp"
#include "ddp/bucket_launcher.hpp"

namespace ddpx {
namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

class HostBucketLauncher : public BucketLauncher {
 public:
  HostBucketLauncher(CommHook& hook, Communicator& comm, AfterReduce after_reduce)
      : hook_(hook), comm_(comm), after_reduce_(std::move(after_reduce)) {
    worker_ = std::thread([this] { work(); });
  }

  ~HostBucketLauncher() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    work_ready_.notify_all();
    worker_.join();
  }

  void begin_step(int64_t, void*) override {
    std::lock_guard lock(mutex_);
    step_begin_ = Clock::now();
    timings_.clear();
    launched_ = completed_ = 0;
  }

  void launch(BucketView& bucket, int64_t step) override {
    {
      std::lock_guard lock(mutex_);
      timings_.push_back({bucket.index, bucket.numel(), hook_.wire_bytes(bucket, step),
                          ms_between(step_begin_, Clock::now()), 0, 0});
      queue_.push_back({&bucket, step, timings_.size() - 1});
      ++launched_;
    }
    work_ready_.notify_one();
  }

  void finish_step() override {
    std::unique_lock lock(mutex_);
    all_done_.wait(lock, [this] { return completed_.load() == launched_.load(); });
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    lock.unlock();  // the communication thread is idle until the next launch
    try {
      hook_.finish_step(nullptr);
    } catch (const std::exception& e) {
      fail("communication hook '{}' failed at the end of a step: {}", hook_.name(), e.what());
    }
  }

  void watch_replay(void*) override {
    fail("Reducer: CUDA graph replays need GPU gradients (--device cuda); the host reducer has no graphs");
  }

  // Buckets of a step are launched 0, 1, 2, ... and complete in that order: the first incomplete one is the
  // number completed. Nothing in flight is complete: the watchdog times collectives, not the backward pass
  // between two launches (the reducer re-arms it at every host launch).
  CommProgress progress() const override {
    const size_t completed = completed_.load();
    return {completed == launched_.load(), static_cast<int64_t>(completed)};
  }

  std::vector<BucketTiming> timings() override {
    std::lock_guard lock(mutex_);
    return timings_;
  }

 private:
  struct Task {
    BucketView* bucket;
    int64_t step;
    size_t timing_slot;
  };

  void work() {
    std::unique_lock lock(mutex_);
    for (;;) {
      work_ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      // Stopping with work queued means the step was abandoned on an error: its later buckets would only wait
      // for peers that are not coming.
      if (stopping_) return;
      Task task = queue_.front();
      queue_.pop_front();
      const bool skip = error_ != nullptr;  // after a failure, later buckets would only hang
      lock.unlock();
      const Clock::time_point start = Clock::now();
      std::exception_ptr failure;
      if (!skip) {
        try {
          hook_.run(*task.bucket, comm_, nullptr, task.step);
          if (after_reduce_) after_reduce_(task.bucket->begin, task.bucket->end, nullptr, nullptr);
        } catch (const std::exception& e) {
          failure = std::make_exception_ptr(Error(fmt::format("communication hook '{}' failed in bucket {} of step "
                                                              "{}: {}", hook_.name(), task.bucket->index,
                                                              task.step, e.what())));
        }
      }
      const Clock::time_point end = Clock::now();
      lock.lock();
      if (failure && !error_) error_ = failure;
      timings_[task.timing_slot].start_ms = ms_between(step_begin_, start);
      timings_[task.timing_slot].end_ms = ms_between(step_begin_, end);
      ++completed_;
      all_done_.notify_all();
    }
  }

  CommHook& hook_;
  Communicator& comm_;
  AfterReduce after_reduce_;
  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable work_ready_, all_done_;
  std::deque<Task> queue_;
  bool stopping_ = false;
  std::exception_ptr error_;
  Clock::time_point step_begin_ = Clock::now();
  std::vector<BucketTiming> timings_;
  std::atomic<size_t> launched_{0}, completed_{0};
};

}  // namespace

std::unique_ptr<BucketLauncher> make_host_launcher(CommHook& hook, Communicator& comm, AfterReduce after_reduce) {
  return std::make_unique<HostBucketLauncher>(hook, comm, std::move(after_reduce));
}

}  // namespace ddpx
