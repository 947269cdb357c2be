// FakeCommunicator: a Communicator for tests of what sits on top of one (the watchdog, the reducer's failure
// paths). Guarantees: rank, size, local rank, backend name and buffer memory are what the test configured; every
// collective is a no-op that counts itself; abort() records its reason, counts and wakes wait_for_abort(). A test
// that needs a collective to hang, stall or fail derives and overrides that one call, keeping the bookkeeping.
// Thread-safe: the watchdog aborts from its own thread.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <string_view>

#include "dist/communicator.hpp"

namespace ddpx::testing {

struct FakeWorld {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  std::string backend = "fake";
  BufferMemory memory = BufferMemory::host;
};

class FakeCommunicator : public Communicator {
 public:
  explicit FakeCommunicator(FakeWorld world = {}) : world_(std::move(world)) {}
  int rank() const override { return world_.rank; }
  int size() const override { return world_.size; }
  int local_rank() const override { return world_.local_rank; }
  std::string backend_name() const override { return world_.backend; }
  BufferMemory buffer_memory() const override { return world_.memory; }
  void all_reduce(void*, size_t, CommDType, ReduceOp, void*) override { ++all_reduces; }
  void broadcast(void*, size_t, CommDType, int, void*) override { ++broadcasts; }
  void all_gather(const void*, void*, size_t, CommDType, void*) override { ++all_gathers; }
  void barrier() override { ++barriers; }
  void abort(std::string_view reason) override {
    std::lock_guard lock(mutex_);
    abort_reason_ = std::string(reason);
    ++aborts_;
    aborted_.notify_all();
  }

  int aborts() const {
    std::lock_guard lock(mutex_);
    return aborts_;
  }
  bool aborted() const { return aborts() > 0; }
  std::string abort_reason() const {
    std::lock_guard lock(mutex_);
    return abort_reason_;
  }
  // Blocks until abort() has been called or `limit` has passed; whether it was called.
  bool wait_for_abort(std::chrono::milliseconds limit) const {
    std::unique_lock lock(mutex_);
    return aborted_.wait_for(lock, limit, [this] { return aborts_ > 0; });
  }

  std::atomic<int> all_reduces{0}, broadcasts{0}, all_gathers{0}, barriers{0};

 private:
  FakeWorld world_;
  mutable std::mutex mutex_;
  mutable std::condition_variable aborted_;
  int aborts_ = 0;
  std::string abort_reason_;
};

}  // namespace ddpx::testing
