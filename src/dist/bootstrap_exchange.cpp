// Bootstrap exchange: route choice and the broadcast/all-gather over each route; see the header.
#include "dist/bootstrap_exchange.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <optional>

#include "core/error.hpp"
#include "dist/launcher.hpp"
#include "dist/tcp_rendezvous.hpp"
#include "dist/torch_store_client.hpp"
#ifdef DDPX_HAVE_MPI
#include <mpi.h>

#include "dist/mpi_session.hpp"
#endif

namespace ddpx {
namespace {

bool environment_says_true(const EnvLookup& env, const char* name) {
  std::optional<std::string> value = env(name);
  if (!value) return false;
  std::string lower = *value;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower == "true" || lower == "1";
}

// How many exchanges with `tag` this process has made so far (all ranks make the same ones in the same order).
int next_sequence(std::string_view tag) {
  static std::mutex mutex;
  static std::map<std::string, int, std::less<>> counts;
  std::lock_guard<std::mutex> lock(mutex);
  return counts[std::string(tag)]++;
}

TorchStoreExchange store_exchange(const WorldInfo& world, std::string_view tag, std::chrono::milliseconds timeout,
                                  const EnvLookup& env) {
  DDPX_REQUIRE(!world.master_addr.empty() && world.master_port > 0,
               "rank {}: torchrun says TORCHELASTIC_USE_AGENT_STORE=True but MASTER_ADDR/MASTER_PORT are not both "
               "set (MASTER_ADDR='{}', MASTER_PORT={}); start the job with torchrun, which sets them",
               world.rank, world.master_addr, world.master_port);
  return TorchStoreExchange{world.master_addr, world.master_port, world.rank, world.world_size,
                            torchrun_store_key_prefix(env, tag, next_sequence(tag)), timeout};
}

#ifdef DDPX_HAVE_MPI
std::vector<uint8_t> mpi_broadcast(const WorldInfo& world, const std::vector<uint8_t>& payload) {
  uint64_t size = payload.size();
  MPI_Bcast(&size, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  std::vector<uint8_t> bytes = world.rank == 0 ? payload : std::vector<uint8_t>(size);
  MPI_Bcast(bytes.data(), static_cast<int>(size), MPI_BYTE, 0, MPI_COMM_WORLD);
  return bytes;
}
#endif

}  // namespace

ExchangeRoute exchange_route(const WorldInfo& world, const EnvLookup& env) {
  if (world.world_size == 1) return ExchangeRoute::single_process;
#ifdef DDPX_HAVE_MPI
  if (MpiSession::initialized() && MpiSession::world_size() == world.world_size &&
      MpiSession::world_rank() == world.rank)
    return ExchangeRoute::mpi;
#endif
  if (world.launcher == "torchrun" && started_by_torchrun(env) &&
      environment_says_true(env, "TORCHELASTIC_USE_AGENT_STORE"))
    return ExchangeRoute::torchrun_store;
  return ExchangeRoute::ddpx_rendezvous;
}

bool started_by_torchrun(const EnvLookup& env) {
  return env("TORCHELASTIC_RUN_ID").has_value() && env(kWorkerMarker).value_or("") != "1";
}

std::string_view route_name(ExchangeRoute route) {
  switch (route) {
    case ExchangeRoute::single_process: return "a single process";
    case ExchangeRoute::mpi: return "MPI";
    case ExchangeRoute::torchrun_store: return "torchrun's agent store";
    case ExchangeRoute::ddpx_rendezvous: return "ddpx's TCP rendezvous";
  }
  return "?";
}

std::string torchrun_store_key_prefix(const EnvLookup& env, std::string_view tag, int sequence) {
  return fmt::format("/ddpx/{}/attempt-{}/{}/{}", env("TORCHELASTIC_RUN_ID").value_or("none"),
                     env("TORCHELASTIC_RESTART_COUNT").value_or("0"), tag, sequence);
}

std::vector<uint8_t> broadcast_from_rank0(const WorldInfo& world, std::string_view tag,
                                          const std::vector<uint8_t>& payload, std::chrono::milliseconds timeout,
                                          const EnvLookup& env) {
  switch (exchange_route(world, env)) {
    case ExchangeRoute::single_process:
      return payload;
    case ExchangeRoute::mpi:
#ifdef DDPX_HAVE_MPI
      return mpi_broadcast(world, payload);
#else
      break;
#endif
    case ExchangeRoute::torchrun_store:
      return torch_store_broadcast(store_exchange(world, tag, timeout, env), payload);
    case ExchangeRoute::ddpx_rendezvous: {
      DDPX_REQUIRE(!world.master_addr.empty() && world.master_port > 0,
                   "rank {}: {} ranks need MASTER_ADDR and MASTER_PORT (or MPI) to exchange the {} before the "
                   "backend starts; launch with `ddpx ... --nproc-per-node N`, torchrun or mpirun, or set both "
                   "variables", world.rank, world.world_size, tag);
      RendezvousConfig config{world.master_addr, world.master_port, world.rank, world.world_size, world.job_token,
                              timeout};
      return rendezvous_broadcast(config, payload);
    }
  }
  fail("internal: no exchange route for rank {}", world.rank);
}

std::vector<std::vector<uint8_t>> allgather_bytes(const WorldInfo& world, std::string_view tag,
                                                  const std::vector<uint8_t>& mine, std::chrono::milliseconds timeout,
                                                  const EnvLookup& env) {
  const ExchangeRoute route = exchange_route(world, env);
  if (route == ExchangeRoute::single_process) return {mine};
  if (route == ExchangeRoute::torchrun_store)
    return torch_store_allgather(store_exchange(world, tag, timeout, env), mine);
  fail("rank {}: an all-gather of the {} is available under torchrun's agent store, not over {} (this job's "
       "route)", world.rank, tag, route_name(route));
}

}  // namespace ddpx
