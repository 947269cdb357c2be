// TCP rendezvous: rank 0 hands a small payload (the NCCL unique id) to every other rank of one job, without MPI.
// Guarantees:
//  - Rank 0 listens ONLY on master_addr:master_port (never on all interfaces); the other ranks connect to it,
//    retrying until the deadline (rank 0 may start later than they do).
//  - Every peer presents the job token, its rank and the world size. A peer with another token (a process of
//    another job that reused the port), a different world size or a rank already seen is rejected with a reason
//    that the rejected peer raises as ddpx::Error; rank 0 keeps waiting for the right peers.
//  - Every failure is a ddpx::Error naming MASTER_ADDR:MASTER_PORT, the rank and what to check; nothing waits
//    past the deadline. Returns once all world_size - 1 peers have the payload (rank 0) or it arrived (others).
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace ddpx {

struct RendezvousConfig {
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  int rank = 0;
  int world_size = 1;
  std::string job_token;
  std::chrono::milliseconds timeout{std::chrono::seconds(120)};
};

// Rank 0 passes the payload and gets it back; other ranks pass anything and get rank 0's payload.
std::vector<uint8_t> rendezvous_broadcast(const RendezvousConfig& config, const std::vector<uint8_t>& payload);

}  // namespace ddpx
