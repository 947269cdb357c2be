// Communicator: the collective operations data parallelism needs, over one group of ranks.
// Guarantees:
//  - Every rank calls the same collectives in the same order with the same counts and dtypes (the caller's
//    contract, as in NCCL and MPI); a backend never reorders them.
//  - Buffers live where buffer_memory() says: host memory for MPI and Gloo, device memory for NCCL, either for Self.
//  - `stream` is an opaque cudaStream_t: NCCL enqueues on it and returns without waiting; host backends ignore
//    it and return when the buffer holds the result.
//  - ReduceOp::avg leaves the mean over ranks (sum / size()) in the buffer.
//  - abort() may be called from any thread (the watchdog's) while another thread is blocked in a collective;
//    afterwards every call throws ddpx::Error. Errors name the backend, the operation and the rank.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace ddpx {

enum class CommDType { f32, f16, bf16, f64, i32, i64, u8 };
enum class ReduceOp { sum, avg, max };
enum class BufferMemory { host, cuda };

size_t comm_dtype_size(CommDType dtype);
std::string_view comm_dtype_name(CommDType dtype);
std::string_view reduce_op_name(ReduceOp op);

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_rank() const = 0;
  virtual std::string backend_name() const = 0;
  virtual BufferMemory buffer_memory() const = 0;

  // In place: buf holds count elements on entry and the reduction over all ranks on exit.
  virtual void all_reduce(void* buf, size_t count, CommDType dtype, ReduceOp op, void* stream) = 0;
  // Out of place: send (count elements, left unchanged) reduced over all ranks into recv (count elements; the two
  // must not overlap). NCCL, MPI and self implement it; the default throws ddpx::Error naming the backend.
  virtual void all_reduce_out_of_place(const void* send, void* recv, size_t count, CommDType dtype, ReduceOp op,
                                       void* stream);
  // root's count elements are copied into buf on every rank.
  virtual void broadcast(void* buf, size_t count, CommDType dtype, int root, void* stream) = 0;
  // recv holds size() * count_per_rank elements on exit, rank r's send at r * count_per_rank.
  virtual void all_gather(const void* send, void* recv, size_t count_per_rank, CommDType dtype, void* stream) = 0;
  // Returns when every rank has entered the barrier (host-blocking on every backend).
  virtual void barrier() = 0;
  // Tears the group down so that peers blocked in collectives fail instead of hanging. MPI's abort ends the
  // whole job (MPI_Abort): it is the only library path that terminates processes, used by the watchdog. Gloo's
  // cannot interrupt a call in progress: that call ends at Gloo's timeout (see gloo_communicator.hpp).
  virtual void abort(std::string_view reason) = 0;
};

}  // namespace ddpx
