// SelfCommunicator: a group of one rank, for "DDP on one process" (the seed's 1-GPU DDP row).
// Guarantees: reductions and broadcasts leave the buffer untouched (the mean of one rank is itself) and cost
// nothing; all_gather copies send to recv only when they differ (cudaMemcpyAsync on `stream` for device memory).
// Works on host or device buffers as chosen at construction. connect_self() (the self entry's factory,
// dist/backend_registry.hpp) builds a host one, and refuses a world of more than one rank.
#pragma once
#include <atomic>
#include <chrono>
#include <memory>

#include "dist/bootstrap.hpp"
#include "dist/ranked_communicator.hpp"

namespace ddpx {

class SelfCommunicator : public RankedCommunicator {
 public:
  explicit SelfCommunicator(BufferMemory memory = BufferMemory::host) : RankedCommunicator("self", memory) {}

  void all_reduce(void* buf, size_t count, CommDType dtype, ReduceOp op, void* stream) override;
  void all_reduce_out_of_place(const void* send, void* recv, size_t count, CommDType dtype, ReduceOp op,
                               void* stream) override;
  void broadcast(void* buf, size_t count, CommDType dtype, int root, void* stream) override;
  void all_gather(const void* send, void* recv, size_t count_per_rank, CommDType dtype, void* stream) override;
  void barrier() override;
  void abort(std::string_view reason) override;

 private:
  void require_alive(std::string_view operation) const;
  std::atomic<bool> aborted_{false};
};

// The self backend's factory: a host SelfCommunicator; an error naming the launcher when world size is not 1.
std::unique_ptr<Communicator> connect_self(const WorldInfo& world, std::chrono::milliseconds rendezvous_timeout,
                                           std::chrono::milliseconds collective_timeout);

}  // namespace ddpx
