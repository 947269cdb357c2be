// Helpers for the kernel tests: fresh random host data, device round trips, bf16 rounding on the host and the
// norm-wise relative error ||got - want|| / ||want|| that every tolerance in these tests is stated in.
#pragma once
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/rng.hpp"
#include "model_cuda/device_buffer.hpp"
#include "support/numeric.hpp"

namespace ddpx::testing {

inline std::vector<float> random_vector(size_t n, uint64_t seed, double scale = 1.0) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(scale * rng.normal());
  return v;
}

inline float round_bf16(float x) { return __bfloat162float(__float2bfloat16(x)); }

inline std::vector<float> rounded_bf16(std::vector<float> v) {
  for (auto& x : v) x = round_bf16(x);
  return v;
}

// Device copy of host floats as T (float or __nv_bfloat16).
template <typename T>
DeviceBuffer<T> to_device(const std::vector<float>& host) {
  std::vector<T> converted(host.size());
  for (size_t i = 0; i < host.size(); ++i) converted[i] = static_cast<T>(host[i]);
  DeviceBuffer<T> buffer(host.size(), "test data");
  buffer.upload(converted);
  return buffer;
}

template <typename T>
std::vector<float> to_host(const DeviceBuffer<T>& buffer) {
  DDPX_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<T> raw = buffer.download();
  std::vector<float> out(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) out[i] = static_cast<float>(raw[i]);
  return out;
}

// relative_error: tests/support/numeric.hpp's.

}  // namespace ddpx::testing
