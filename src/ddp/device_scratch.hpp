// DeviceScratch: a grow-only device allocation owned by one hook (CUDA builds only; see device_scratch.cpp).
// Guarantee: reserve() reallocates only when asked for more than it holds, after waiting for the device (work
// already enqueued may still use the old block; a host sync), so after the first step of a fixed plan it never
// allocates and work that uses it can be graph-captured. data() is stable from then on.
#pragma once
#include <cstddef>

namespace ddpx {

class DeviceScratch {
 public:
  DeviceScratch() = default;
  ~DeviceScratch();
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;

  void* reserve(size_t bytes);  // returns at least `bytes` of device memory
  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace ddpx
