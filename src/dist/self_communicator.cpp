// SelfCommunicator: world size 1; see the header for what each collective does.
#include "dist/self_communicator.hpp"

#include <cstring>

#include "core/error.hpp"
#ifdef DDPX_HAVE_CUDA
#include <cuda_runtime.h>

#include "core/cuda_check.hpp"
#endif

namespace ddpx {

void SelfCommunicator::require_alive(std::string_view operation) const {
  DDPX_REQUIRE(!aborted_, "self communicator: {} called after abort()", operation);
}

void SelfCommunicator::all_reduce(void*, size_t, CommDType, ReduceOp, void*) { require_alive("all_reduce"); }

void SelfCommunicator::all_reduce_out_of_place(const void* send, void* recv, size_t count, CommDType dtype, ReduceOp,
                                               void* stream) {
  all_gather(send, recv, count, dtype, stream);  // one rank: the reduction of send is send itself
}

void SelfCommunicator::broadcast(void*, size_t, CommDType, int root, void*) {
  require_alive("broadcast");
  DDPX_REQUIRE(root == 0, "self communicator: broadcast root {} does not exist (world size is 1)", root);
}

void SelfCommunicator::all_gather(const void* send, void* recv, size_t count_per_rank, CommDType dtype,
                                  void* stream) {
  require_alive("all_gather");
  if (send == recv || count_per_rank == 0) return;
  size_t bytes = count_per_rank * comm_dtype_size(dtype);
  if (buffer_memory() == BufferMemory::host) {
    std::memmove(recv, send, bytes);
    return;
  }
#ifdef DDPX_HAVE_CUDA
  DDPX_CUDA_CHECK(cudaMemcpyAsync(recv, send, bytes, cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(stream)));
#else
  (void)stream;
  fail("self communicator: device buffers need a CUDA build of ddpx");
#endif
}

void SelfCommunicator::barrier() { require_alive("barrier"); }

void SelfCommunicator::abort(std::string_view) { aborted_ = true; }

std::unique_ptr<Communicator> connect_self(const WorldInfo& world, std::chrono::milliseconds,
                                           std::chrono::milliseconds) {
  DDPX_REQUIRE(world.world_size == 1, "backend 'self' runs one process but the {} environment says world size {}; "
                                      "use --backend mpi or nccl", launcher_name(world.launcher),
               world.world_size);
  return std::make_unique<SelfCommunicator>();
}

}  // namespace ddpx
