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
#include <gloo/transport/context.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/device.h>

#include <cstring>
#include <exception>
#include <thread>

#include "core/error.hpp"
#include "dist/host_reduction.hpp"

namespace ddpx {
namespace {

constexpr auto kPeerFailureGrace = std::chrono::milliseconds(500);
constexpr uint32_t kAddressFormat = 1;  // u32 format, then per rank: u32 length, the pair's address bytes

// A Gloo context whose pairs are connected from addresses gathered by the caller's all-gather: what
// gloo::rendezvous::Context::connectFullMesh does over a key-value store, here over one exchange.
class MeshContext : public gloo::Context {
 public:
  MeshContext(int rank, int size) : gloo::Context(rank, size) {}

  void connect(const std::shared_ptr<gloo::transport::Device>& device, const BytesAllGather& exchange) {
    auto transport = device->createContext(rank, size);
    transport->setTimeout(getTimeout());
    // Each pair listens on its own socket: the payload holds, for every rank (this one's entry empty), the
    // address of the pair that waits for that rank.
    std::vector<uint8_t> mine(sizeof kAddressFormat);
    std::memcpy(mine.data(), &kAddressFormat, sizeof kAddressFormat);
    for (int peer = 0; peer < size; ++peer) {
      std::vector<char> bytes;
      if (peer != rank) bytes = transport->createPair(peer)->address().bytes();
      const uint32_t length = static_cast<uint32_t>(bytes.size());
      const auto* raw = reinterpret_cast<const uint8_t*>(&length);
      mine.insert(mine.end(), raw, raw + sizeof length);
      mine.insert(mine.end(), bytes.begin(), bytes.end());
    }

    const std::vector<std::vector<uint8_t>> all = exchange(mine);
    DDPX_REQUIRE(all.size() == static_cast<size_t>(size), "gloo backend, rank {}: the address exchange returned {} "
                 "payloads for {} ranks", rank, all.size(), size);
    for (int peer = 0; peer < size; ++peer) {  // the same order on every rank, as connectFullMesh does
      if (peer == rank) continue;
      const std::vector<char> address = address_for(all[static_cast<size_t>(peer)], peer);
      try {
        transport->getPair(peer)->connect(address);
      } catch (const std::exception& e) {
        fail("gloo backend, rank {}: cannot connect to rank {} at {}: {}", rank, peer,
             gloo::transport::tcp::Address(address).str(), e.what());
      }
    }
    device_ = device;
    transportContext_ = std::move(transport);
  }

 private:
  // The entry for this rank in rank `peer`'s payload: the address of the pair there that waits for this rank.
  std::vector<char> address_for(const std::vector<uint8_t>& theirs, int peer) const {
    auto unreadable = [&] {
      fail("gloo backend, rank {}: rank {}'s addresses ({} bytes) are not in the form this build reads (do all "
           "ranks run the same ddpx, with the same world size?)", rank, peer, theirs.size());
    };
    uint32_t format = 0;
    if (theirs.size() < sizeof format) unreadable();
    std::memcpy(&format, theirs.data(), sizeof format);
    if (format != kAddressFormat) unreadable();
    size_t at = sizeof format;
    for (int entry = 0; entry < size; ++entry) {
      uint32_t length = 0;
      if (theirs.size() - at < sizeof length) unreadable();
      std::memcpy(&length, theirs.data() + at, sizeof length);
      at += sizeof length;
      if (theirs.size() - at < length) unreadable();
      if (entry == rank) {
        if (length == 0) unreadable();
        return std::vector<char>(theirs.begin() + static_cast<ptrdiff_t>(at),
                                 theirs.begin() + static_cast<ptrdiff_t>(at + length));
      }
      at += length;
    }
    unreadable();
    return {};
  }
};

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
    : rank_(rank), size_(size), local_rank_(local_rank), timeout_(options.timeout) {
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
  auto context = std::make_shared<MeshContext>(rank, size);
  context->setTimeout(timeout_);
  context->connect(device, exchange);
  context_ = std::move(context);
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

void GlooCommunicator::abort(std::string_view) { aborted_ = true; }

}  // namespace ddpx
