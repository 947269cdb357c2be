// DeviceBuffer<T>: one cudaMalloc'ed array, freed on destruction (move-only RAII), plus blocking host copies.
// Guarantees: allocation failure is a ddpx::Error naming what the memory was for and how much was asked;
// size() counts elements of T. Copies are synchronous (cudaMemcpy), for set-up and tests, never in a step.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/cuda_check.hpp"

namespace ddpx {

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(size_t count, const std::string& what) : size_(count) {
    if (count == 0) return;
    cudaError_t status = cudaMalloc(&data_, count * sizeof(T));
    if (status != cudaSuccess) {
      (void)cudaGetLastError();
      fail("cudaMalloc of {:.1f} MiB for {} failed: {} ({}); lower the batch size or use a smaller model",
           static_cast<double>(count * sizeof(T)) / (1 << 20), what, cudaGetErrorName(status),
           cudaGetErrorString(status));
    }
  }
  ~DeviceBuffer() {
    if (data_) cudaFree(data_);
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept : data_(std::exchange(other.data_, nullptr)), size_(other.size_) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      if (data_) cudaFree(data_);
      data_ = std::exchange(other.data_, nullptr);
      size_ = other.size_;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() const { return data_; }
  size_t size() const { return size_; }
  size_t bytes() const { return size_ * sizeof(T); }

  void upload(const T* host, size_t count) {
    DDPX_REQUIRE(count <= size_, "upload of {} elements into a device buffer of {}", count, size_);
    DDPX_CUDA_CHECK(cudaMemcpy(data_, host, count * sizeof(T), cudaMemcpyHostToDevice));
  }
  void upload(const std::vector<T>& host) { upload(host.data(), host.size()); }
  std::vector<T> download(size_t count) const {
    DDPX_REQUIRE(count <= size_, "download of {} elements from a device buffer of {}", count, size_);
    std::vector<T> host(count);
    DDPX_CUDA_CHECK(cudaMemcpy(host.data(), data_, count * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }
  std::vector<T> download() const { return download(size_); }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace ddpx
