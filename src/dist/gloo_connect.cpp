// connect_gloo: the Gloo backend's factory, the gloo entry of dist/backend_registry (see gloo_communicator.hpp).
// Moved unchanged from dist/bootstrap.cpp's make_gloo (built only with Gloo, as every gloo_*.cpp).
#include <cstdlib>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "dist/bootstrap_exchange.hpp"
#include "dist/gloo_communicator.hpp"
#include "dist/tcp_rendezvous.hpp"

namespace ddpx {

std::unique_ptr<Communicator> connect_gloo(const WorldInfo& world, std::chrono::milliseconds rendezvous_timeout,
                                           std::chrono::milliseconds collective_timeout) {
  DDPX_REQUIRE(world.world_size == 1 || (!world.master_addr.empty() && world.master_port > 0),
               "rank {}: the gloo backend with {} ranks needs MASTER_ADDR and MASTER_PORT to connect its ranks; "
               "launch with `ddpx ... --nproc-per-node N --backend gloo`, torchrun, or set both variables",
               world.rank, world.world_size);
  RendezvousConfig config;
  config.master_addr = world.master_addr;
  config.master_port = world.master_port;
  config.rank = world.rank;
  config.world_size = world.world_size;
  config.job_token = world.job_token;
  config.timeout = rendezvous_timeout;
  GlooOptions options;
  options.timeout = collective_timeout;
  if (const char* interface = std::getenv("GLOO_SOCKET_IFNAME")) options.interface_name = interface;
  options.reach = world.master_addr.empty() ? "127.0.0.1" : world.master_addr;
  if (world.world_size == 1)
    return std::make_unique<GlooCommunicator>(
        0, 1, 0, [](const std::vector<uint8_t>& mine) { return std::vector<std::vector<uint8_t>>{mine}; }, options);
  // Under torchrun's agent store MASTER_PORT is the store's: the addresses go through it.
  if (exchange_route(world) == ExchangeRoute::torchrun_store) {
    auto through_store = [&](const std::vector<uint8_t>& mine) {
      return allgather_bytes(world, "Gloo addresses", mine, rendezvous_timeout);
    };
    return std::make_unique<GlooCommunicator>(world.rank, world.world_size, world.local_rank, through_store, options);
  }
  // MASTER_PORT is taken (rank 0) or seen taken (the others) before any Gloo pair binds an ephemeral port, which
  // could otherwise be MASTER_PORT itself when a launcher picked it as a free port a moment ago.
  std::unique_ptr<RendezvousHost> host;
  if (world.rank == 0) host = std::make_unique<RendezvousHost>(config);
  else wait_for_rendezvous(config);
  auto exchange = [&](const std::vector<uint8_t>& mine) {
    return host ? host->allgather(mine) : rendezvous_allgather(config, mine);
  };
  return std::make_unique<GlooCommunicator>(world.rank, world.world_size, world.local_rank, exchange, options);
}

}  // namespace ddpx
