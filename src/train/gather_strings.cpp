// All-gather of variable-length strings: lengths first, then the bytes padded to the longest.
#include "train/gather_strings.hpp"

#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#ifdef DDPX_HAVE_CUDA
#include <cuda_runtime.h>

#include "core/cuda_check.hpp"
#endif

namespace ddpx {
namespace {

// all_gather on host memory, staging through the device when the communicator needs device buffers.
void gather_bytes(Communicator& comm, const void* send, void* recv, size_t bytes_per_rank) {
  if (comm.buffer_memory() == BufferMemory::host) {
    comm.all_gather(send, recv, bytes_per_rank, CommDType::u8, nullptr);
    return;
  }
#ifdef DDPX_HAVE_CUDA
  const size_t total = bytes_per_rank * static_cast<size_t>(comm.size());
  void *d_send = nullptr, *d_recv = nullptr;
  DDPX_CUDA_CHECK(cudaMalloc(&d_send, bytes_per_rank));
  DDPX_CUDA_CHECK(cudaMalloc(&d_recv, total));
  DDPX_CUDA_CHECK(cudaMemcpy(d_send, send, bytes_per_rank, cudaMemcpyHostToDevice));
  comm.all_gather(d_send, d_recv, bytes_per_rank, CommDType::u8, nullptr);
  DDPX_CUDA_CHECK(cudaDeviceSynchronize());
  DDPX_CUDA_CHECK(cudaMemcpy(recv, d_recv, total, cudaMemcpyDeviceToHost));
  cudaFree(d_send);
  cudaFree(d_recv);
#else
  (void)send, (void)recv;
  fail("internal: a device communicator in a build without CUDA");
#endif
}

}  // namespace

std::vector<std::string> gather_strings(Communicator& comm, const std::string& mine) {
  const int n = comm.size();
  int64_t length = static_cast<int64_t>(mine.size());
  std::vector<int64_t> lengths(static_cast<size_t>(n));
  gather_bytes(comm, &length, lengths.data(), sizeof(int64_t));
  const size_t longest = static_cast<size_t>(*std::max_element(lengths.begin(), lengths.end()));
  std::vector<char> padded(longest, 0), all(longest * static_cast<size_t>(n));
  std::memcpy(padded.data(), mine.data(), mine.size());
  gather_bytes(comm, padded.data(), all.data(), longest);
  std::vector<std::string> result;
  for (int r = 0; r < n; ++r) result.emplace_back(all.data() + r * longest, static_cast<size_t>(lengths[r]));
  return result;
}

}  // namespace ddpx
