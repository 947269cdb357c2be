// Bootstrap: environment detection and backend construction.
#include "dist/bootstrap.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "dist/bootstrap_exchange.hpp"
#include "dist/gpu_selection.hpp"
#include "dist/job_environment.hpp"
#include "dist/self_communicator.hpp"
#include "dist/tcp_rendezvous.hpp"
#ifdef DDPX_HAVE_MPI
#include "dist/mpi_communicator.hpp"
#endif
#ifdef DDPX_HAVE_CUDA
#include <cuda_runtime.h>

#include "dist/nccl_communicator.hpp"
#endif
#ifdef DDPX_HAVE_GLOO
#include "dist/gloo_communicator.hpp"
#endif

namespace ddpx {
namespace {

struct LauncherVariables {
  const char* launcher;
  const char* rank;
  const char* size;
  const char* local_rank;  // may be absent from the environment
  const char* local_size;  // may be absent too
};

constexpr LauncherVariables kLaunchers[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"PMI", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {"Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"},
};

int parse_int(const EnvLookup& env, const std::string& name, int fallback) {
  std::optional<std::string> text = env(name);
  if (!text) return fallback;
  int value = 0;
  auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), value);
  DDPX_REQUIRE(error == std::errc() && end == text->data() + text->size() && value >= 0,
               "environment variable {}='{}' is not a non-negative integer", name, *text);
  return value;
}

}  // namespace

EnvLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (!value) return std::nullopt;
    return std::string(value);
  };
}

bool launched_as_worker(const EnvLookup& env) { return detect_world(env).world_size > 1; }

WorldInfo detect_world(const EnvLookup& env) {
  WorldInfo world;
  for (const LauncherVariables& vars : kLaunchers) {
    if (!env(vars.rank) || !env(vars.size)) continue;
    world.launcher = vars.launcher;
    world.rank = parse_int(env, vars.rank, 0);
    world.world_size = parse_int(env, vars.size, 1);
    world.local_rank = parse_int(env, vars.local_rank, 0);
    DDPX_REQUIRE(world.world_size >= 1 && world.rank < world.world_size,
                 "{} environment: {}={} is not below {}={} (every rank must be in 0..world size - 1)",
                 world.launcher, vars.rank, world.rank, vars.size, world.world_size);
    DDPX_REQUIRE(world.local_rank < world.world_size, "{} environment: {}={} is not below {}={}", world.launcher,
                 vars.local_rank, world.local_rank, vars.size, world.world_size);
    // Only a hint (CPU threads per rank), and Slurm's is the requested count, inherited by smaller job steps:
    // an unreadable or inconsistent value is clamped into [local rank + 1, world size], never fatal.
    int local_size = world.world_size;
    if (std::optional<std::string> text = env(vars.local_size)) {
      auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), local_size);
      if (error != std::errc() || end != text->data() + text->size()) local_size = world.world_size;
    }
    world.local_world_size = std::clamp(local_size, world.local_rank + 1, world.world_size);
    break;
  }
  world.master_addr = env("MASTER_ADDR").value_or("");
  world.master_port = parse_int(env, "MASTER_PORT", 0);
  DDPX_REQUIRE(world.master_port < 65536, "MASTER_PORT={} is not a TCP port (1..65535)", world.master_port);
  complete_job_environment(world, env);
  world.job_token = env("DDPX_JOB_TOKEN").value_or("");
  // Under torchrun, its run id (a random UUID with --standalone; --rdzv-id otherwise) and restart count: processes
  // of another job or of an earlier attempt are rejected, and an outsider cannot guess a random run id.
  const std::string run_id = env("TORCHELASTIC_RUN_ID").value_or("");
  if (world.job_token.empty() && !run_id.empty() && run_id != "none")
    world.job_token = "torchrun-" + run_id + "-attempt" + env("TORCHELASTIC_RESTART_COUNT").value_or("0");
  return world;
}

bool needs_mpi_session(std::string_view backend, const WorldInfo& world) {
  return backend == "mpi" || (world.mpi_launched && world.world_size > 1);
}

bool gloo_available() {
#ifdef DDPX_HAVE_GLOO
  return true;
#else
  return false;
#endif
}

std::string resolve_backend(std::string_view requested, std::string_view device, const EnvLookup& env) {
  if (requested != "auto") return std::string(requested);
  if (device == "cuda") return "nccl";
  return started_by_mpi_launcher(env) || !gloo_available() ? "mpi" : "gloo";
}

#ifdef DDPX_HAVE_GLOO
namespace {

std::unique_ptr<Communicator> make_gloo(const WorldInfo& world, std::chrono::milliseconds rendezvous_timeout,
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

}  // namespace
#endif

std::unique_ptr<Communicator> make_communicator(std::string_view backend, const WorldInfo& world,
                                                std::chrono::milliseconds rendezvous_timeout,
                                                std::chrono::milliseconds collective_timeout) {
  if (backend == "self") {
    DDPX_REQUIRE(world.world_size == 1, "backend 'self' runs one process but the {} environment says world size {}; "
                                        "use --backend mpi or nccl", world.launcher, world.world_size);
    return std::make_unique<SelfCommunicator>();
  }
  if (backend == "mpi") {
#ifdef DDPX_HAVE_MPI
    auto comm = std::make_unique<MpiCommunicator>();
    DDPX_REQUIRE(comm->size() == world.world_size,
                 "MPI reports {} ranks but the {} environment says {}: start the job with mpirun -np N (without "
                 "RANK/WORLD_SIZE set) or use --backend nccl", comm->size(), world.launcher, world.world_size);
    return comm;
#else
    fail("backend 'mpi' is not available: this ddpx was built without MPI (install libopenmpi-dev and rebuild)");
#endif
  }
  if (backend == "gloo") {
#ifdef DDPX_HAVE_GLOO
    return make_gloo(world, rendezvous_timeout, collective_timeout);
#else
    fail("backend 'gloo' is not available: install libgloo-dev and rebuild");
#endif
  }
  if (backend == "nccl") {
#ifdef DDPX_HAVE_CUDA
    return connect_nccl(world, rendezvous_timeout, collective_timeout);
#else
    (void)rendezvous_timeout;
    (void)collective_timeout;
    fail("backend 'nccl' is not available: this ddpx was built without CUDA; use --backend mpi");
#endif
  }
  fail("unknown communication backend '{}' (--backend): expected nccl, mpi, gloo or self", backend);
}

}  // namespace ddpx
