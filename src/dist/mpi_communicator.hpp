// MpiCommunicator: the CPU backend, collectives of Open MPI over host buffers.
// Guarantees:
//  - Works on its own duplicate of the given communicator (default MPI_COMM_WORLD), so its traffic never matches
//    another library's messages. Needs MPI initialized with thread support (see mpi_session.hpp).
//  - All collectives are MPI's own (no hand-written algorithms); calls block until the buffer holds the result;
//    `stream` is ignored. Counts beyond INT_MAX are split into several calls.
//  - f16/bf16 are reduced by MPI user operations that widen each pair to float, add (or max) and round back to
//    nearest even, the way NCCL reduces 16-bit data. avg is sum followed by a division by size() in the dtype.
//  - abort() prints nothing itself and calls MPI_Abort: the whole job ends (mpirun reports it, exit non-zero).
//  - connect_mpi() (the mpi entry's factory, dist/backend_registry.hpp) needs MPI up; an MPI world of another
//    size than the launcher's variables say is an error saying how to start the job.
#pragma once
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <memory>

#include "dist/bootstrap.hpp"
#include "dist/ranked_communicator.hpp"

namespace ddpx {

class MpiCommunicator : public RankedCommunicator {
 public:
  explicit MpiCommunicator(MPI_Comm parent = MPI_COMM_WORLD, int local_rank = -1);  // -1: from MPI's split
  ~MpiCommunicator() override;

  void all_reduce(void* buf, size_t count, CommDType dtype, ReduceOp op, void* stream) override;
  void all_reduce_out_of_place(const void* send, void* recv, size_t count, CommDType dtype, ReduceOp op,
                               void* stream) override;
  void broadcast(void* buf, size_t count, CommDType dtype, int root, void* stream) override;
  void all_gather(const void* send, void* recv, size_t count_per_rank, CommDType dtype, void* stream) override;
  void barrier() override;
  void abort(std::string_view reason) override;

 private:
  MPI_Datatype mpi_type(CommDType dtype) const;
  MPI_Op mpi_op(CommDType dtype, ReduceOp op) const;
  void check(int status, std::string_view operation) const;

  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Datatype f16_type_ = MPI_DATATYPE_NULL, bf16_type_ = MPI_DATATYPE_NULL;
  MPI_Op f16_sum_ = MPI_OP_NULL, f16_max_ = MPI_OP_NULL, bf16_sum_ = MPI_OP_NULL, bf16_max_ = MPI_OP_NULL;
  std::atomic<bool> aborted_{false};
};

// The mpi backend's factory (see the guarantees above); both timeouts are ignored (the watchdog bounds waits).
std::unique_ptr<Communicator> connect_mpi(const WorldInfo& world, std::chrono::milliseconds rendezvous_timeout,
                                          std::chrono::milliseconds collective_timeout);

}  // namespace ddpx
