// Bootstrap exchange: route choice and the broadcast/all-gather over each route; see the header.
#include "dist/bootstrap_exchange.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <optional>

#include "core/error.hpp"
#include "core/internal_assert.hpp"
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

// Rank 0 of a job that spans nodes must not listen on a loopback address: the other nodes could never connect,
// and would only say so at their timeout. (torchrun 1.13's c10d rendezvous names node 0 by its host name, which
// Debian's /etc/hosts maps to 127.0.1.1.)
void require_reachable_master_addr(const WorldInfo& world) {
  if (world.rank != 0 || world.local_world_size >= world.world_size) return;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(world.master_addr.c_str(), nullptr, &hints, &found) != 0 || !found) return;  // said later
  bool all_loopback = true;
  std::string first;
  for (addrinfo* a = found; a; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = "?";
    bool loopback = false;
    if (a->ai_family == AF_INET) {
      const auto* v4 = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
      loopback = (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
      ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
    } else if (a->ai_family == AF_INET6) {
      const auto* v6 = reinterpret_cast<const sockaddr_in6*>(a->ai_addr);
      loopback = IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr);
      ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
    }
    if (first.empty()) first = text;
    all_loopback = all_loopback && loopback;
  }
  ::freeaddrinfo(found);
  DDPX_REQUIRE(!all_loopback,
               "rank 0: MASTER_ADDR '{}' is {} on this host, a loopback address, but {} of the {} ranks run on other "
               "nodes and cannot reach it there; make this host's name resolve to an address the other nodes reach "
               "(for example in /etc/hosts), or name one in MASTER_ADDR (torchrun: --master_addr with --node_rank)",
               world.master_addr, first, world.world_size - world.local_world_size, world.world_size);
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
  if (world.launcher == LauncherKind::torchrun && started_by_torchrun(env) &&
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
                   "backend starts; launch with `ddpx ... --nproc-per-node N`, torchrun, mpirun or srun, or set both "
                   "variables", world.rank, world.world_size, tag);
      RendezvousConfig config{world.master_addr, world.master_port, world.rank, world.world_size, world.job_token,
                              timeout};
      if (world.master_origin.empty()) {
        require_reachable_master_addr(world);
        return rendezvous_broadcast(config, payload);
      }
      try {  // derived from Slurm's variables (dist/job_environment.hpp): say so, and how to choose others
        require_reachable_master_addr(world);
        return rendezvous_broadcast(config, payload);
      } catch (const Error& e) {
        fail("{} [{}; export MASTER_ADDR and MASTER_PORT to choose others]", e.what(), world.master_origin);
      }
    }
  }
  DDPX_INTERNAL_FAIL("no exchange route for rank {}", world.rank);
}

std::vector<std::vector<uint8_t>> allgather_bytes(const WorldInfo& world, std::string_view tag,
                                                  const std::vector<uint8_t>& mine, std::chrono::milliseconds timeout,
                                                  const EnvLookup& env) {
  const ExchangeRoute route = exchange_route(world, env);
  if (route == ExchangeRoute::single_process) return {mine};
  if (route == ExchangeRoute::torchrun_store)
    return torch_store_allgather(store_exchange(world, tag, timeout, env), mine);
  if (route == ExchangeRoute::ddpx_rendezvous) {
    DDPX_REQUIRE(!world.master_addr.empty() && world.master_port > 0,
                 "rank {}: {} ranks need MASTER_ADDR and MASTER_PORT (or MPI) to exchange the {}; launch with "
                 "`ddpx ... --nproc-per-node N`, torchrun or mpirun, or set both variables",
                 world.rank, world.world_size, tag);
    require_reachable_master_addr(world);
    RendezvousConfig config{world.master_addr, world.master_port, world.rank, world.world_size, world.job_token,
                            timeout};
    return rendezvous_allgather(config, mine);
  }
  fail("rank {}: an all-gather of the {} runs over torchrun's agent store or ddpx's rendezvous, not over {} (this "
       "job's route)", world.rank, tag, route_name(route));
}

}  // namespace ddpx
