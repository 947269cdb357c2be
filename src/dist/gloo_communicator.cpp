// GlooCommunicator: a Gloo context connected over an all-gather of the pairs' addresses; Gloo's collectives.
#include "dist/gloo_communicator.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/transport/tcp/device.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <thread>

#include "core/error.hpp"
#include "dist/gloo_mesh.hpp"
#include "dist/host_reduction.hpp"

namespace ddpx {
namespace {

constexpr auto kPeerFailureGrace = std::chrono::milliseconds(500);
constexpr auto kRollCallPatience = std::chrono::milliseconds(2000);
// Gloo splits a buffer into segments on element boundaries and calls the reduction with a count of elements, so
// the output is declared with an element type of the dtype's size.
void set_output(gloo::AllreduceOptions& options, void* buf, size_t count, size_t element_bytes) {
  switch (element_bytes) {
    case 1: return options.setOutput(static_cast<uint8_t*>(buf), count);
    case 2: return options.setOutput(static_cast<uint16_t*>(buf), count);
    case 4: return options.setOutput(static_cast<uint32_t*>(buf), count);
    case 8: return options.setOutput(static_cast<uint64_t*>(buf), count);
  }
  fail("gloo backend: no element type of {} bytes", element_bytes);
}

}  // namespace

std::string GlooCommunicator::local_address_towards(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  int status = ::getaddrinfo(host.c_str(), "9", &hints, &found);
  DDPX_REQUIRE(status == 0 && found, "gloo backend: cannot resolve MASTER_ADDR '{}': {}", host, gai_strerror(status));
  std::string local;
  int fd = ::socket(found->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0) {  // a UDP connect sends nothing
    sockaddr_storage mine{};
    socklen_t length = sizeof mine;
    char text[INET6_ADDRSTRLEN] = {};
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&mine), &length) == 0) {
      const void* raw = mine.ss_family == AF_INET6
                            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6&>(mine).sin6_addr)
                            : static_cast<const void*>(&reinterpret_cast<sockaddr_in&>(mine).sin_addr);
      if (::inet_ntop(mine.ss_family, raw, text, sizeof text)) local = text;
    }
  }
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(found);
  DDPX_REQUIRE(!local.empty(), "gloo backend: no local address routes to MASTER_ADDR '{}'; set GLOO_SOCKET_IFNAME "
               "to the network interface the ranks share", host);
  return local;
}

GlooCommunicator::GlooCommunicator(int rank, int size, int local_rank, const BytesAllGather& exchange,
                                   const GlooOptions& options)
    : RankedCommunicator("gloo", BufferMemory::host, rank, size, local_rank), timeout_(options.timeout) {
  DDPX_REQUIRE(size >= 1 && rank >= 0 && rank < size, "gloo backend: rank {} is not within world size {}", rank,
               size);
  DDPX_REQUIRE(timeout_.count() > 0, "gloo backend: the timeout must be positive, got {} ms", timeout_.count());
  gloo::transport::tcp::attr attr;
  if (!options.interface_name.empty()) attr.iface = options.interface_name;
  else attr.hostname = !options.listen_address.empty() ? options.listen_address
                                                       : local_address_towards(options.reach.empty() ? "127.0.0.1"
                                                                                                     : options.reach);
  std::shared_ptr<gloo::transport::Device> device;
  try {
    device = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    fail("gloo backend, rank {}: cannot listen on {}: {} (set GLOO_SOCKET_IFNAME to a network interface of this "
         "machine)", rank, attr.iface.empty() ? attr.hostname : "interface " + attr.iface, e.what());
  }
  // Two meshes: the collectives' and a spare one for the roll call after a failure (a Gloo context that timed out
  // has closed all its pairs).
  std::vector<std::shared_ptr<gloo::Context>> contexts = connect_gloo_meshes(rank, size, 2, device, timeout_,
                                                                             exchange);
  context_ = std::move(contexts[0]);
  roll_call_context_ = std::move(contexts[1]);
}

GlooCommunicator::~GlooCommunicator() = default;

void GlooCommunicator::require_alive(std::string_view operation) const {
  DDPX_REQUIRE(!aborted_.load(), "gloo backend, rank {}: {} called after the communicator was aborted", rank_,
               operation);
}

template <typename Run>
void GlooCommunicator::run(std::string_view operation, Run&& body) {
  require_alive(operation);
  try {
    body(next_tag_++);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    const std::string reason = e.what();
    // The peer's end went away: the peer failed first (or timed out and closed). Launchers report the first rank
    // to exit, so this rank gives the culprit a moment to be seen first instead of racing it to the exit.
    if (reason.find("closed by peer") != std::string::npos || reason.find("reset by peer") != std::string::npos)
      std::this_thread::sleep_for(kPeerFailureGrace);
    report_roll_call(operation);
    fail("gloo backend, rank {}: {} failed{}: {} (a peer rank died or stalled for longer than the timeout of {:g} "
         "s)", rank_, operation, aborted_.load() ? " after the communicator was aborted" : "", reason,
         std::chrono::duration<double>(timeout_).count());
  }
}

void GlooCommunicator::all_reduce(void* buf, size_t count, CommDType dtype, ReduceOp op, void*) {
  if (count == 0 || size_ == 1) return require_alive("all_reduce");
  const size_t element_bytes = comm_dtype_size(dtype);
  run("all_reduce", [&](uint32_t tag) {
    gloo::AllreduceOptions options(context_);
    set_output(options, buf, count, element_bytes);
    options.setReduceFunction([dtype, op](void* out, const void* a, const void* b, size_t elements) {
      combine_elements(out, a, b, elements, dtype, op);
    });
    options.setTag(tag);
    options.setTimeout(timeout_);
    gloo::allreduce(options);
  });
  if (op == ReduceOp::avg) divide_by_world(buf, count, dtype, size_);
}

void GlooCommunicator::broadcast(void* buf, size_t count, CommDType dtype, int root, void*) {
  DDPX_REQUIRE(root >= 0 && root < size_, "gloo backend: broadcast root {} is not a rank of this {}-rank group",
               root, size_);
  if (count == 0 || size_ == 1) return require_alive("broadcast");
  run("broadcast", [&](uint32_t tag) {
    gloo::BroadcastOptions options(context_);
    options.setOutput(static_cast<uint8_t*>(buf), count * comm_dtype_size(dtype));
    options.setRoot(root);
    options.setTag(tag);
    options.setTimeout(timeout_);
    gloo::broadcast(options);
  });
}

void GlooCommunicator::all_gather(const void* send, void* recv, size_t count_per_rank, CommDType dtype, void*) {
  const size_t bytes = count_per_rank * comm_dtype_size(dtype);
  char* own_slot = static_cast<char*>(recv) + static_cast<size_t>(rank_) * bytes;
  if (bytes == 0) return require_alive("all_gather");
  if (size_ == 1) {
    require_alive("all_gather");
    if (send != own_slot) std::memmove(own_slot, send, bytes);
    return;
  }
  run("all_gather", [&](uint32_t tag) {
    gloo::AllgatherOptions options(context_);
    // Gloo copies the input into this rank's slot first; an input that already is the slot needs no copy.
    if (send != own_slot) options.setInput(const_cast<uint8_t*>(static_cast<const uint8_t*>(send)), bytes);
    options.setOutput(static_cast<uint8_t*>(recv), bytes * static_cast<size_t>(size_));
    options.setTag(tag);
    options.setTimeout(timeout_);
    gloo::allgather(options);
  });
}

void GlooCommunicator::barrier() {
  if (size_ == 1) return require_alive("barrier");
  run("barrier", [&](uint32_t tag) {
    gloo::BarrierOptions options(context_);
    options.setTag(tag);
    options.setTimeout(timeout_);
    gloo::barrier(options);
  });
}

void GlooCommunicator::report_roll_call(std::string_view operation) {
  if (roll_called_.exchange(true) || size_ == 1) return;
  const std::string line = fmt::format("ddpx: rank {}: roll call after the failed gloo {}: {}\n", rank_, operation,
                                       roll_call());
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

std::string GlooCommunicator::roll_call() {
  constexpr uint64_t kRollCallSlot = 0x524f4c4c;  // "ROLL"
  using Clock = std::chrono::steady_clock;
  const auto patience = std::min<std::chrono::milliseconds>(kRollCallPatience, timeout_);
  const auto deadline = Clock::now() + patience;
  const size_t world = static_cast<size_t>(size_);
  std::vector<uint8_t> here(world, 1), answers(world, 0);
  std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> sends(world), receives(world);
  std::string silent, closed;
  auto add = [](std::string& list, int peer) { list += (list.empty() ? "" : ", ") + std::to_string(peer); };
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    const size_t p = static_cast<size_t>(peer);
    try {
      sends[p] = roll_call_context_->createUnboundBuffer(&here[p], 1);
      sends[p]->send(peer, kRollCallSlot);
      receives[p] = roll_call_context_->createUnboundBuffer(&answers[p], 1);
      receives[p]->recv(peer, kRollCallSlot);
    } catch (const std::exception&) {
      add(closed, peer);
      receives[p].reset();
    }
  }
  for (int peer = 0; peer < size_; ++peer) {
    const size_t p = static_cast<size_t>(peer);
    if (!receives[p]) continue;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    try {
      if (!receives[p]->waitRecv(nullptr, std::max(left, std::chrono::milliseconds(1)))) add(silent, peer);
    } catch (const std::exception& e) {
      // A wait that timed out ends every pair of the context, so later waits report the same timeout.
      add(std::string(e.what()).find("imed out") != std::string::npos ? silent : closed, peer);
    }
  }
  for (auto& send : sends) try {
      if (send) send->waitSend(nullptr, std::chrono::milliseconds(1));
    } catch (const std::exception&) {
    }
  std::string result;
  if (!silent.empty())
    result += fmt::format("rank(s) {} did not answer within {:g} s (stopped, hung or busy elsewhere)", silent,
                          std::chrono::duration<double>(patience).count());
  if (!closed.empty())
    result += fmt::format("{}rank(s) {} had closed their connections (exited or died)", result.empty() ? "" : "; ",
                          closed);
  return result.empty() ? "every other rank answered" : result;
}

void GlooCommunicator::abort(std::string_view) { aborted_ = true; }

}  // namespace ddpx
