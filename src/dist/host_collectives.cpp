// Host collectives: direct on host backends, staged through device memory on CUDA backends.
#include "dist/host_collectives.hpp"

#include "core/error.hpp"
#ifdef DDPX_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace ddpx {
namespace {

#ifdef DDPX_HAVE_CUDA
void check_cuda(cudaError_t status, const char* what) {
  DDPX_REQUIRE(status == cudaSuccess, "host collective staging: {} failed: {}", what, cudaGetErrorString(status));
}

// A device buffer that lives for one staged collective.
class DeviceStaging {
 public:
  explicit DeviceStaging(size_t bytes) { check_cuda(cudaMalloc(&data_, bytes ? bytes : 1), "cudaMalloc"); }
  ~DeviceStaging() { cudaFree(data_); }
  char* data() { return static_cast<char*>(data_); }

 private:
  void* data_ = nullptr;
};
#endif

}  // namespace

void all_gather_host(Communicator& comm, const void* send, void* recv, size_t bytes_per_rank) {
  if (comm.buffer_memory() == BufferMemory::host) {
    comm.all_gather(send, recv, bytes_per_rank, CommDType::u8, nullptr);
    return;
  }
#ifdef DDPX_HAVE_CUDA
  size_t total = bytes_per_rank * static_cast<size_t>(comm.size());
  DeviceStaging staging(bytes_per_rank + total);
  char* device_send = staging.data();
  char* device_recv = staging.data() + bytes_per_rank;
  check_cuda(cudaMemcpy(device_send, send, bytes_per_rank, cudaMemcpyHostToDevice), "copy to device");
  comm.all_gather(device_send, device_recv, bytes_per_rank, CommDType::u8, nullptr);
  check_cuda(cudaMemcpy(recv, device_recv, total, cudaMemcpyDeviceToHost), "copy to host");
#else
  fail("host collective on a device backend needs a CUDA build of ddpx");
#endif
}

void broadcast_host(Communicator& comm, void* buf, size_t bytes, int root) {
  if (comm.buffer_memory() == BufferMemory::host) {
    comm.broadcast(buf, bytes, CommDType::u8, root, nullptr);
    return;
  }
#ifdef DDPX_HAVE_CUDA
  DeviceStaging staging(bytes);
  check_cuda(cudaMemcpy(staging.data(), buf, bytes, cudaMemcpyHostToDevice), "copy to device");
  comm.broadcast(staging.data(), bytes, CommDType::u8, root, nullptr);
  check_cuda(cudaMemcpy(buf, staging.data(), bytes, cudaMemcpyDeviceToHost), "copy to host");
#else
  fail("host collective on a device backend needs a CUDA build of ddpx");
#endif
}

}  // namespace ddpx
