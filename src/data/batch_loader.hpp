// BatchLoader: worker threads fill a ring of host batch slots several steps ahead of the consumer.
// Guarantees:
//  - acquire() returns the batches of steps first_step, first_step+1, ... in order, each filled by
//    Dataset::fill_batch (so contents do not depend on the number of workers or their timing).
//  - A slot is refilled only after release(); the consumer must release the batch it acquired before acquiring
//    again... except it may hold up to `depth - 1` (e.g. while an async host->device copy from it is in flight).
//  - Slot memory comes from the allocator in Options (pinned host memory for CUDA, plain memory on the CPU).
//  - With Options::cores the workers run on those cores only (--pin-loaders; data/loader_affinity.hpp); without,
//    on the mask of the thread that built the loader.
//  - With Options::pixel_batches (image sources only) a slot holds the uint8 batch (Dataset::fill_pixels, a quarter
//    of the float batch's bytes) and no floats: the consumer normalizes it (the CUDA engine, on the device).
//  - A worker exception is rethrown by acquire() in the consumer thread when it asks for the step that failed;
//    batches of earlier steps are still delivered first, whatever the workers' timing. The destructor stops and
//    joins workers.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "data/dataset.hpp"

namespace ddpx {

struct HostBatch {
  float* images = nullptr;    // [batch, C, H, W]; null with pixel batches
  uint8_t* pixels = nullptr;  // [batch, H, W, C] with pixel batches, else null
  int32_t* labels = nullptr;  // [batch]
  int64_t batch = 0;
  int64_t step = -1;
  int slot = -1;
};

class BatchLoader {
 public:
  struct Options {
    int workers = 4;
    int depth = 4;  // slots in the ring (batches prepared ahead)
    bool pixel_batches = false;  // uint8 batches (the dataset must fill pixels)
    std::vector<int> cores;      // the workers' CPU affinity (data/loader_affinity.hpp); empty: not pinned
    std::function<void*(size_t bytes)> allocate;  // default: operator new
    std::function<void(void*)> deallocate;
  };

  BatchLoader(const Dataset& dataset, int rank, int world, int64_t batch, int64_t first_step, Options options);
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // Blocks until the next step's batch is ready.
  const HostBatch& acquire();
  // Returns a slot obtained from acquire() to the workers.
  void release(const HostBatch& batch);

  int workers() const { return static_cast<int>(threads_.size()); }

 private:
  enum class SlotState { free, filling, ready, in_use };
  void worker_loop();

  const Dataset& dataset_;
  int rank_, world_;
  int64_t batch_;
  Options options_;
  std::vector<HostBatch> slots_;
  std::vector<SlotState> states_;
  int64_t next_to_fill_;     // next step a worker will claim
  int64_t next_to_consume_;  // next step acquire() returns
  std::mutex mutex_;
  std::condition_variable slot_freed_, batch_ready_;
  bool stopping_ = false;
  std::exception_ptr worker_error_;
  int64_t failed_step_ = 0;  // the step whose fill threw (valid when worker_error_ is set)
  std::vector<std::thread> threads_;
};

}  // namespace ddpx
