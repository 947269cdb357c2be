// NcclCommunicator: the GPU backend, NCCL collectives on device buffers (built only with CUDA).
// Guarantees:
//  - Created collectively: every rank passes the same unique id (from new_unique_id() on rank 0, distributed by
//    the bootstrap) and its own rank; the communicator uses the CUDA device current at construction.
//  - Each collective is enqueued on the given stream (nullptr: the legacy default stream) and returns without a
//    host synchronization, so calls can be captured in a CUDA graph. avg uses ncclAvg.
//  - abort() calls ncclCommAbort (safe from the watchdog thread while kernels hang); every later call throws.
//    The destructor calls ncclCommDestroy unless aborted. Errors quote ncclGetErrorString and NCCL's last error.
//  - connect_nccl() (the nccl entry's factory, dist/backend_registry.hpp) binds the rank's GPU
//    (bind_cuda_device, dist/gpu_selection.hpp), then shares rank 0's unique id through broadcast_from_rank0
//    (dist/bootstrap_exchange: MPI, torchrun's agent store or ddpx's TCP rendezvous) within rendezvous_timeout.
#pragma once
#include <array>
#include <atomic>
#include <chrono>
#include <memory>

#include "dist/bootstrap.hpp"
#include "dist/ranked_communicator.hpp"

namespace ddpx {

using NcclUniqueIdBytes = std::array<char, 128>;  // NCCL_UNIQUE_ID_BYTES

class NcclCommunicator : public RankedCommunicator {
 public:
  static NcclUniqueIdBytes new_unique_id();

  NcclCommunicator(const NcclUniqueIdBytes& id, int rank, int size, int local_rank);
  ~NcclCommunicator() override;

  void all_reduce(void* buf, size_t count, CommDType dtype, ReduceOp op, void* stream) override;
  void all_reduce_out_of_place(const void* send, void* recv, size_t count, CommDType dtype, ReduceOp op,
                               void* stream) override;
  void broadcast(void* buf, size_t count, CommDType dtype, int root, void* stream) override;
  void all_gather(const void* send, void* recv, size_t count_per_rank, CommDType dtype, void* stream) override;
  void barrier() override;
  void abort(std::string_view reason) override;

  // NCCL's asynchronous error state ("" when healthy), for the watchdog.
  std::string async_error() const;

 private:
  void check(int result, std::string_view operation) const;
  void* comm_ = nullptr;  // ncclComm_t
  int device_ = 0;  // current at construction; abort() selects it on the calling thread
  std::atomic<bool> aborted_{false};
};

// The nccl backend's factory (see the guarantees above); the collective timeout is the watchdog's, not NCCL's.
std::unique_ptr<Communicator> connect_nccl(const WorldInfo& world, std::chrono::milliseconds rendezvous_timeout,
                                           std::chrono::milliseconds collective_timeout);

}  // namespace ddpx
