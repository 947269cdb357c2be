// connect_nccl: the NCCL backend's factory, the nccl entry of dist/backend_registry (see nccl_communicator.hpp).
// Moved unchanged from dist/bootstrap.cpp's make_nccl (built only with CUDA, as every nccl_*.cpp).
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "dist/bootstrap_exchange.hpp"
#include "dist/gpu_selection.hpp"
#include "dist/nccl_communicator.hpp"

namespace ddpx {
namespace {

NcclUniqueIdBytes share_nccl_id(const WorldInfo& world, std::chrono::milliseconds timeout) {
  NcclUniqueIdBytes id{};
  if (world.rank == 0) id = NcclCommunicator::new_unique_id();
  std::vector<uint8_t> bytes =
      broadcast_from_rank0(world, "NCCL unique id", std::vector<uint8_t>(id.begin(), id.end()), timeout);
  DDPX_REQUIRE(bytes.size() == id.size(), "rank {}: the exchange delivered {} bytes instead of a {}-byte NCCL id",
               world.rank, bytes.size(), id.size());
  std::memcpy(id.data(), bytes.data(), id.size());
  return id;
}

}  // namespace

std::unique_ptr<Communicator> connect_nccl(const WorldInfo& world, std::chrono::milliseconds rendezvous_timeout,
                                           std::chrono::milliseconds /*collective_timeout: the watchdog's*/) {
  bind_cuda_device(world);
  NcclUniqueIdBytes id = share_nccl_id(world, rendezvous_timeout);
  return std::make_unique<NcclCommunicator>(id, world.rank, world.world_size, world.local_rank);
}

}  // namespace ddpx
