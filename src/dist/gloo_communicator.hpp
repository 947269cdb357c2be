// GlooCommunicator: the CPU backend without MPI: Gloo's collectives over its TCP transport, host buffers.
// Guarantees:
//  - Connects two full meshes (one TCP connection per pair of ranks each: the collectives' and the roll call's,
//    see gloo_mesh.hpp). The pairs' addresses travel through `exchange`, called once: an all-gather of small byte
//    payloads that the caller provides (ddpx's TCP rendezvous, rendezvous_allgather, or torchrun's store); this
//    class never talks to a rendezvous itself.
//  - The collectives are Gloo's own algorithms (ring all-reduce, all-gather, broadcast, barrier); calls block
//    until the buffer holds the result; `stream` is ignored. Every rank gets bit-identical results.
//  - f16/bf16 are reduced by widening each pair to float, adding (or max) and rounding back to nearest even, as
//    NCCL and the MPI backend do; avg is sum followed by a division by size() in the dtype.
//  - Time: every wait inside a Gloo collective, and the connect, gives up after options.timeout (Gloo's context
//    timeout; ddpx train passes --comm-timeout). A peer that died closes its connections, so its peers fail at
//    once; a peer that stalls (stopped, hung) makes its peers fail when the timeout expires. Either way the call
//    throws ddpx::Error naming the backend, the operation, the rank and Gloo's reason, and never hangs. When the
//    reason is that a peer closed its end, the call first waits 0.5 s: the peer failed first, and a launcher
//    (ddpx's, torchrun, mpirun) reports the first rank to exit, which should be that peer, not this rank.
//  - After a collective fails, the rank calls the roll on a second mesh connected for this alone (the failed
//    context has closed its pairs): every rank whose collective failed too answers within min(2 s, timeout). It
//    prints one line to stderr, "ddpx: rank 0: roll call after the failed gloo all_reduce: rank(s) 2 did not
//    answer within 2 s (stopped, hung or busy elsewhere)" (or the ranks whose connections had closed: exited or
//    died), before the error propagates: so the stalled rank is named by its live peers, whatever message (the
//    watchdog's or this one's) the rank then exits with. Once per communicator.
//  - abort() (the watchdog's, any thread) marks the communicator aborted: every later call throws ddpx::Error at
//    once. It does not interrupt a call in progress (Gloo offers no way to wake another thread's wait); that call
//    still ends within options.timeout of its last progress, which is what bounds a stalled collective.
//  - connect_gloo() (the gloo entry's factory, dist/backend_registry.hpp) connects the mesh through an all-gather
//    of the ranks' addresses (torchrun's store, or ddpx's rendezvous at MASTER_ADDR:MASTER_PORT; several ranks
//    without both variables are an error saying how to launch); every Gloo wait gives up after
//    collective_timeout. Each rank listens on the address it uses to reach MASTER_ADDR, or on the interface
//    GLOO_SOCKET_IFNAME names.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dist/bootstrap.hpp"
#include "dist/gloo_mesh.hpp"
#include "dist/ranked_communicator.hpp"

namespace ddpx {

struct GlooOptions {
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};
  // Where this rank listens for its peers: an address or host name of this machine (default: the address this
  // machine uses to reach `reach` below, so the peers can reach it back), or a network interface name.
  std::string listen_address;
  std::string interface_name;  // takes precedence over listen_address (GLOO_SOCKET_IFNAME in connect_gloo)
  std::string reach;           // MASTER_ADDR, used to find listen_address when it is empty
};

class GlooCommunicator : public RankedCommunicator {
 public:
  GlooCommunicator(int rank, int size, int local_rank, const BytesAllGather& exchange, const GlooOptions& options);
  ~GlooCommunicator() override;

  void all_reduce(void* buf, size_t count, CommDType dtype, ReduceOp op, void* stream) override;
  void broadcast(void* buf, size_t count, CommDType dtype, int root, void* stream) override;
  void all_gather(const void* send, void* recv, size_t count_per_rank, CommDType dtype, void* stream) override;
  void barrier() override;
  void abort(std::string_view reason) override;

  // The address of this machine that a connection towards `host` leaves from ("127.0.0.1" for a loopback host).
  static std::string local_address_towards(const std::string& host);

 private:
  void require_alive(std::string_view operation) const;
  void report_roll_call(std::string_view operation);  // once: calls the roll and prints what it found
  std::string roll_call();
  template <typename Run>
  void run(std::string_view operation, Run&& body);

  std::chrono::milliseconds timeout_;
  std::shared_ptr<gloo::Context> context_;
  std::shared_ptr<gloo::Context> roll_call_context_;  // a second mesh, used once, after a failure
  std::atomic<bool> roll_called_{false};
  uint32_t next_tag_ = 0;
  std::atomic<bool> aborted_{false};
};

// The gloo backend's factory (see the guarantees above).
std::unique_ptr<Communicator> connect_gloo(const WorldInfo& world, std::chrono::milliseconds rendezvous_timeout,
                                           std::chrono::milliseconds collective_timeout);

}  // namespace ddpx
