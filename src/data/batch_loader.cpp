// Ring-of-slots loader; see batch_loader.hpp for the guarantees.
#include "data/batch_loader.hpp"

#include "data/loader_affinity.hpp"


#include "core/error.hpp"

namespace ddpx {

BatchLoader::BatchLoader(const Dataset& dataset, int rank, int world, int64_t batch, int64_t first_step,
                         Options options)
    : dataset_(dataset),
      rank_(rank),
      world_(world),
      batch_(batch),
      options_(std::move(options)),
      next_to_fill_(first_step),
      next_to_consume_(first_step) {
  DDPX_REQUIRE(batch > 0, "--batch must be positive, got {}", batch);
  DDPX_REQUIRE(options_.workers >= 1 && options_.workers <= 256, "--workers must be in [1, 256], got {}",
               options_.workers);
  DDPX_REQUIRE(options_.depth >= 2, "loader depth must be at least 2, got {}", options_.depth);
  if (!options_.allocate) options_.allocate = [](size_t bytes) { return ::operator new(bytes); };
  if (!options_.deallocate) options_.deallocate = [](void* p) { ::operator delete(p); };
  DDPX_REQUIRE(!options_.pixel_batches || dataset.fills_pixels(),
               "uint8 batches asked of {}, which has none (only image sources do)", dataset.describe());
  const size_t numel = static_cast<size_t>(batch) * static_cast<size_t>(dataset.shape().image_numel());
  slots_.resize(static_cast<size_t>(options_.depth));
  states_.assign(slots_.size(), SlotState::free);
  for (size_t s = 0; s < slots_.size(); ++s) {
    if (options_.pixel_batches) {
      slots_[s].pixels = static_cast<uint8_t*>(options_.allocate(numel));
    } else {
      slots_[s].images = static_cast<float*>(options_.allocate(numel * sizeof(float)));
    }
    slots_[s].labels = static_cast<int32_t*>(options_.allocate(static_cast<size_t>(batch) * sizeof(int32_t)));
    slots_[s].batch = batch;
    slots_[s].slot = static_cast<int>(s);
  }
  for (int w = 0; w < options_.workers; ++w) threads_.emplace_back([this] { worker_loop(); });
}

BatchLoader::~BatchLoader() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  slot_freed_.notify_all();
  batch_ready_.notify_all();
  for (auto& t : threads_) t.join();
  for (auto& s : slots_) {
    options_.deallocate(s.images != nullptr ? static_cast<void*>(s.images) : static_cast<void*>(s.pixels));
    options_.deallocate(s.labels);
  }
}

void BatchLoader::worker_loop() {
  pin_this_thread(options_.cores);
  const int64_t depth = static_cast<int64_t>(slots_.size());
  for (;;) {
    HostBatch* slot = nullptr;
    int64_t step = 0;
    {
      std::unique_lock lock(mutex_);
      // A step may be filled once its slot is free; slot index = step mod depth.
      slot_freed_.wait(lock, [&] {
        return stopping_ || states_[static_cast<size_t>(next_to_fill_ % depth)] == SlotState::free;
      });
      if (stopping_) return;
      step = next_to_fill_++;
      const size_t s = static_cast<size_t>(step % depth);
      states_[s] = SlotState::filling;
      slot = &slots_[s];
    }
    try {
      if (options_.pixel_batches) {
        dataset_.fill_pixels(step, rank_, world_, batch_, slot->pixels, slot->labels);
      } else {
        dataset_.fill_batch(step, rank_, world_, batch_, slot->images, slot->labels);
      }
    } catch (...) {
      std::lock_guard lock(mutex_);
      // The earliest failing step wins; batches of earlier steps (claimed before it, so already being filled)
      // are still delivered in order.
      if (!worker_error_ || step < failed_step_) {
        worker_error_ = std::current_exception();
        failed_step_ = step;
      }
      stopping_ = true;
      batch_ready_.notify_all();
      slot_freed_.notify_all();
      return;
    }
    {
      std::lock_guard lock(mutex_);
      slot->step = step;
      states_[static_cast<size_t>(step % depth)] = SlotState::ready;
    }
    batch_ready_.notify_all();
  }
}

const HostBatch& BatchLoader::acquire() {
  std::unique_lock lock(mutex_);
  const size_t s = static_cast<size_t>(next_to_consume_ % static_cast<int64_t>(slots_.size()));
  const auto failed_here = [&] { return worker_error_ && next_to_consume_ >= failed_step_; };
  batch_ready_.wait(lock, [&] {
    return states_[s] == SlotState::ready || failed_here() || (stopping_ && !worker_error_);
  });
  if (states_[s] != SlotState::ready && failed_here()) std::rethrow_exception(worker_error_);
  DDPX_REQUIRE(states_[s] == SlotState::ready, "batch loader stopped while step {} was awaited", next_to_consume_);
  states_[s] = SlotState::in_use;
  ++next_to_consume_;
  return slots_[s];
}

void BatchLoader::release(const HostBatch& batch) {
  {
    std::lock_guard lock(mutex_);
    DDPX_REQUIRE(batch.slot >= 0 && static_cast<size_t>(batch.slot) < slots_.size() &&
                     states_[static_cast<size_t>(batch.slot)] == SlotState::in_use,
                 "batch loader: slot {} released without being acquired", batch.slot);
    states_[static_cast<size_t>(batch.slot)] = SlotState::free;
  }
  slot_freed_.notify_all();
}

}  // namespace ddpx
