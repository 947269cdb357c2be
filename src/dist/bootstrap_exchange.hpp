// Bootstrap exchange: how the few bytes a backend needs before it can start (NCCL's unique id; later Gloo's
// addresses) reach every rank, whichever launcher started the job. `train`, `allreduce`, `bench` and the tests
// all go through these functions, so what the tests exchange is exactly what the NCCL backend exchanges.
// Guarantees:
//  - The route follows from the environment, in this order: one rank (nothing to send); MPI, when it is
//    initialized and spans exactly this world; torchrun's agent store, when torchrun says
//    TORCHELASTIC_USE_AGENT_STORE=True (MASTER_ADDR:MASTER_PORT is then that store, served by an agent, so no
//    rank may listen there); otherwise ddpx's own TCP rendezvous, rank 0 listening on MASTER_ADDR:MASTER_PORT
//    (ddpx's launcher; torchrun 1.13 with c10d rendezvous or --standalone, where MASTER_PORT is a port that the
//    agent of the node with rank 0 found free). A worker of ddpx's own launcher (DDPX_WORKER=1) never takes the
//    store route, even when it inherited torchrun's variables. On ddpx's rendezvous, rank 0 of a job that spans
//    nodes (LOCAL_WORLD_SIZE < WORLD_SIZE) refuses at once a MASTER_ADDR that is a loopback address on its host
//    (the other nodes could not connect), naming the address and what to fix. Where Slurm's variables gave the
//    address and port (WorldInfo::master_origin), the rendezvous' errors say so and how to export others.
//  - Keys in torchrun's store are "/ddpx/<TORCHELASTIC_RUN_ID>/attempt-<TORCHELASTIC_RESTART_COUNT>/<tag>/<n>",
//    n counting this process's exchanges with that tag, so restarted workers and repeated exchanges never read
//    stale values. All ranks must make the same exchanges in the same order (as collectives must).
//  - Everything ends within `timeout` (an all-gather on torchrun's store: at most 5 s more, to name the ranks that
//    never came) with a ddpx::Error naming the route, MASTER_ADDR:MASTER_PORT and the rank.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dist/bootstrap.hpp"

namespace ddpx {

enum class ExchangeRoute { single_process, mpi, torchrun_store, ddpx_rendezvous };

ExchangeRoute exchange_route(const WorldInfo& world, const EnvLookup& env = process_environment());
// True when torchrun's agent started this process (TORCHELASTIC_RUN_ID is set, as every torchrun version sets it)
// and ddpx's own launcher did not (DDPX_WORKER is not 1).
bool started_by_torchrun(const EnvLookup& env = process_environment());
std::string_view route_name(ExchangeRoute route);  // "torchrun's agent store", ...

// The key prefix for exchange number `sequence` with `tag` in torchrun's store (see the guarantees above).
std::string torchrun_store_key_prefix(const EnvLookup& env, std::string_view tag, int sequence);

// Rank 0's payload to every rank (rank 0 gets its own back).
std::vector<uint8_t> broadcast_from_rank0(const WorldInfo& world, std::string_view tag,
                                          const std::vector<uint8_t>& payload, std::chrono::milliseconds timeout,
                                          const EnvLookup& env = process_environment());

// Every rank's bytes to every rank, index = rank. Available on the single-process and torchrun-store routes (what
// a CPU backend needs under torchrun); other routes are a ddpx::Error naming the route.
std::vector<std::vector<uint8_t>> allgather_bytes(const WorldInfo& world, std::string_view tag,
                                                  const std::vector<uint8_t>& mine, std::chrono::milliseconds timeout,
                                                  const EnvLookup& env = process_environment());

}  // namespace ddpx
