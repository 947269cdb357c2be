// TCP rendezvous: the small exchanges that start a job without MPI: rank 0 hands one payload to every rank (the
// NCCL unique id), or gathers one small payload from every rank and hands all of them back (Gloo's addresses).
// Guarantees:
//  - Rank 0 listens ONLY on master_addr:master_port (never on all interfaces); the other ranks connect to it,
//    retrying until the deadline (rank 0 may start later than they do).
//  - Every peer presents the job token, the exchange it wants (broadcast or all-gather), its rank and the world
//    size. A peer with another token (a process of another job that reused the port), another exchange, a
//    different world size, a rank outside 1..world-1 (compared as unsigned: 2^31 is not a negative rank) or a rank
//    already present is rejected with a reason that the rejected peer raises as ddpx::Error; rank 0 keeps waiting
//    for the right peers.
//  - A rank counts as served only once it has acknowledged receipt: a peer that sends a valid hello and vanishes
//    takes no rank's place, and the real rank can still join afterwards. In an all-gather, a peer that disconnects
//    before every rank is present frees its rank again; one that vanishes after the payloads were sent (its payload
//    is then in the other ranks' hands) fails the exchange on rank 0, naming the rank.
//  - Without a job token the rendezvous runs only on a loopback MASTER_ADDR (only this machine can reach it). On
//    any other address it refuses to start, naming DDPX_JOB_TOKEN, unless allow_without_token is set or the
//    environment has DDPX_ALLOW_NO_TOKEN=1 (a trusted network, explicitly).
//  - Rank 0 serves every connection at once, each with its own deadline (5 s to introduce itself, 5 s to take the
//    answer and acknowledge): silent, slow or idle connections delay nobody, and past 256 connections still
//    introducing themselves the oldest is dropped. A peer that fails any check is dropped (told why when it got
//    as far as a hello) and the job goes on; only the real ranks' absence fails rank 0, at the timeout.
//  - What a peer without the token can make rank 0 read is bounded: the hello's header (magic, exchange, rank,
//    world size, token of at most 4096 bytes, payload length: 4124 bytes at most, rendezvous_wire.hpp); the
//    payload is read only after the token and every field passed, and a broadcast hello carries none.
//  - Every failure is a ddpx::Error naming MASTER_ADDR:MASTER_PORT, the rank and what to check; nothing waits
//    past the deadline. Payloads: at most 1 MiB each, 64 MiB for all of an all-gather together.
// Wire format (integers little-endian as the hosts are; both sides are ddpx of the same build):
//   peer -> rank 0: "DDPXRDV2", u32 exchange (1 broadcast, 2 all-gather), u32 rank, u32 world_size,
//                   u32 token_length, token, u32 payload_length, payload (empty for a broadcast)
//   rank 0 -> peer: u8 status (0 accepted, 1 rejected), u32 length, body (the payload; for an all-gather world_size
//                   times u32 length + payload, in rank order; a rejection's reason)
//   peer -> rank 0: u8 0xAC once the whole body arrived (after an acceptance only)
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
  bool allow_without_token = false;  // run without a token on a non-loopback address (also DDPX_ALLOW_NO_TOKEN=1)
};

// Rank 0 passes the payload and gets it back; other ranks pass anything and get rank 0's payload.
std::vector<uint8_t> rendezvous_broadcast(const RendezvousConfig& config, const std::vector<uint8_t>& payload);

// Every rank passes its own payload and gets world_size payloads back, rank r's at index r (its own included).
std::vector<std::vector<uint8_t>> rendezvous_allgather(const RendezvousConfig& config,
                                                       const std::vector<uint8_t>& mine);

// The same all-gather in two steps, for ranks that bind ports of their own before they know their payload (Gloo's
// pairs listen on ephemeral ports, and MASTER_PORT, picked free by a launcher, may be one): rank 0 binds
// MASTER_ADDR:MASTER_PORT at construction and runs one all-gather later; the other ranks wait_for_rendezvous()
// (connect and close at once until rank 0 listens, within the timeout) before binding anything, then call
// rendezvous_allgather.
class RendezvousHost {
 public:
  explicit RendezvousHost(const RendezvousConfig& config);  // rank 0 only
  ~RendezvousHost();
  RendezvousHost(const RendezvousHost&) = delete;
  RendezvousHost& operator=(const RendezvousHost&) = delete;
  std::vector<std::vector<uint8_t>> allgather(const std::vector<uint8_t>& mine);  // once

 private:
  RendezvousConfig config_;
  int listener_fd_ = -1;
};

void wait_for_rendezvous(const RendezvousConfig& config);

}  // namespace ddpx
