// RankedCommunicator: what every backend's communicator (self, mpi, gloo, nccl) has besides its collectives.
// Guarantees: rank(), size() and local_rank() return rank_, size_ and local_rank_, which the backend's
// constructor sets (from its arguments, or from the library as MPI's does) before any collective;
// backend_name() and buffer_memory() return what the backend's constructor passed (the registry's spelling:
// dist/backend_registry.hpp). Not copyable: a copy would share the library's group handle, and abort() on one
// would tear down the other's.
#pragma once
#include <string>
#include <string_view>

#include "dist/communicator.hpp"

namespace ddpx {

class RankedCommunicator : public Communicator {
 public:
  RankedCommunicator(const RankedCommunicator&) = delete;
  RankedCommunicator& operator=(const RankedCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  std::string backend_name() const override { return std::string(backend_); }
  BufferMemory buffer_memory() const override { return memory_; }

 protected:
  RankedCommunicator(std::string_view backend, BufferMemory memory, int rank = 0, int size = 1, int local_rank = 0)
      : rank_(rank), size_(size), local_rank_(local_rank), backend_(backend), memory_(memory) {}

  int rank_, size_, local_rank_;

 private:
  std::string_view backend_;  // a string literal: "gloo"
  BufferMemory memory_;
};

}  // namespace ddpx
