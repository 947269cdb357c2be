// Host collectives: direct on host backends, staged through device memory on CUDA backends. The one place that
// stages host bytes for a device communicator (the agreement checks, the run report's gather and, through
// broadcast_host, any host buffer rank 0 hands to every rank).
#include "dist/host_collectives.hpp"

#include "core/error.hpp"
#include "core/internal_assert.hpp"
#ifdef DDPX_HAVE_CUDA
#include <cuda_runtime.h>

#include "core/cuda_check.hpp"
#endif

namespace ddpx {
namespace {

#ifdef DDPX_HAVE_CUDA
// A device buffer that lives for one staged collective.
class DeviceStaging {
 public:
  explicit DeviceStaging(size_t bytes) { DDPX_CUDA_CHECK(cudaMalloc(&data_, bytes ? bytes : 1)); }
  ~DeviceStaging() { cudaFree(data_); }
  DeviceStaging(const DeviceStaging&) = delete;
  DeviceStaging& operator=(const DeviceStaging&) = delete;
  char* data() { return static_cast<char*>(data_); }

 private:
  void* data_ = nullptr;
};

// Waits for the collective just enqueued on the default stream (it returns once a watchdog's abort ends a hung
// one; run_watched then raises the watchdog's message). A failed wait throws before anything is copied back.
void wait_for_collective() { DDPX_CUDA_CHECK(cudaDeviceSynchronize()); }
#endif

}  // namespace

void all_gather_host(Communicator& comm, const void* send, void* recv, size_t bytes_per_rank) {
  if (comm.buffer_memory() == BufferMemory::host) {
    comm.all_gather(send, recv, bytes_per_rank, CommDType::u8, nullptr);
    return;
  }
#ifdef DDPX_HAVE_CUDA
  const size_t total = bytes_per_rank * static_cast<size_t>(comm.size());
  DeviceStaging staging(bytes_per_rank + total);
  char* device_send = staging.data();
  char* device_recv = staging.data() + bytes_per_rank;
  DDPX_CUDA_CHECK(cudaMemcpy(device_send, send, bytes_per_rank, cudaMemcpyHostToDevice));
  comm.all_gather(device_send, device_recv, bytes_per_rank, CommDType::u8, nullptr);
  wait_for_collective();
  DDPX_CUDA_CHECK(cudaMemcpy(recv, device_recv, total, cudaMemcpyDeviceToHost));
#else
  DDPX_INTERNAL_FAIL("a device communicator in a build without CUDA");
#endif
}

void broadcast_host(Communicator& comm, void* buf, size_t bytes, int root) {
  if (comm.buffer_memory() == BufferMemory::host) {
    comm.broadcast(buf, bytes, CommDType::u8, root, nullptr);
    return;
  }
#ifdef DDPX_HAVE_CUDA
  DeviceStaging staging(bytes);
  DDPX_CUDA_CHECK(cudaMemcpy(staging.data(), buf, bytes, cudaMemcpyHostToDevice));
  comm.broadcast(staging.data(), bytes, CommDType::u8, root, nullptr);
  wait_for_collective();
  DDPX_CUDA_CHECK(cudaMemcpy(buf, staging.data(), bytes, cudaMemcpyDeviceToHost));
#else
  DDPX_INTERNAL_FAIL("a device communicator in a build without CUDA");
#endif
}

}  // namespace ddpx
