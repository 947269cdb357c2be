// TCP rendezvous: a length-prefixed protocol over one connection per peer (the wire format is in the header).
#include "dist/tcp_rendezvous.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include "core/error.hpp"
#include "dist/socket_deadline.hpp"

namespace ddpx {
namespace {

using Clock = std::chrono::steady_clock;
constexpr char kMagic[8] = {'D', 'D', 'P', 'X', 'R', 'D', 'V', '2'};
constexpr uint32_t kMaxTokenBytes = 4096;
constexpr uint32_t kMaxPayloadBytes = 1 << 20;
constexpr size_t kMaxGatheredBytes = size_t{64} << 20;
constexpr uint8_t kAcknowledged = 0xAC;
// One peer gets this long to introduce itself or to acknowledge, so a silent stranger cannot stall the job.
constexpr auto kPeerPatience = std::chrono::seconds(5);

enum class Exchange : uint32_t { broadcast = 1, allgather = 2 };

std::string exchange_name(uint32_t exchange) {
  if (exchange == static_cast<uint32_t>(Exchange::broadcast)) return "broadcast";
  if (exchange == static_cast<uint32_t>(Exchange::allgather)) return "all-gather";
  return "exchange " + std::to_string(exchange);
}

class Socket {
 public:
  explicit Socket(int fd = -1) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(Socket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Socket& operator=(Socket&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  int fd() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

std::string endpoint(const RendezvousConfig& config) {
  return config.master_addr + ":" + std::to_string(config.master_port);
}


// Reads or writes exactly `bytes`; false on timeout or a closed connection.
bool transfer(int fd, void* data, size_t bytes, bool reading, Clock::time_point deadline) {
  auto* cursor = static_cast<char*>(data);
  while (bytes > 0) {
    pollfd waiter{fd, static_cast<short>(reading ? POLLIN : POLLOUT), 0};
    int ready = ::poll(&waiter, 1, remaining_ms(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    ssize_t done = reading ? ::recv(fd, cursor, bytes, 0) : ::send(fd, cursor, bytes, MSG_NOSIGNAL);
    if (done < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (done <= 0) return false;
    cursor += done;
    bytes -= static_cast<size_t>(done);
  }
  return true;
}

bool read_u32(int fd, uint32_t& value, Clock::time_point deadline) {
  return transfer(fd, &value, sizeof value, true, deadline);
}

void append_u32(std::vector<char>& out, uint32_t value) {
  const char* bytes = reinterpret_cast<const char*>(&value);
  out.insert(out.end(), bytes, bytes + sizeof value);
}

bool write_message(int fd, uint8_t status, const void* body, size_t length, Clock::time_point deadline) {
  std::vector<char> message(1);
  message[0] = static_cast<char>(status);
  append_u32(message, static_cast<uint32_t>(length));
  const char* begin = static_cast<const char*>(body);
  if (length) message.insert(message.end(), begin, begin + length);
  return transfer(fd, message.data(), message.size(), false, deadline);
}

bool acknowledged(int fd, Clock::time_point deadline) {
  uint8_t ack = 0;
  return transfer(fd, &ack, 1, true, deadline) && ack == kAcknowledged;
}

// A connected peer that has sent its hello and waits for the answer sends nothing more: readable means it closed
// (or misbehaves). Either way it no longer holds its rank.
bool peer_gone(int fd) {
  pollfd waiter{fd, POLLIN, 0};
  return ::poll(&waiter, 1, 0) > 0;
}

sockaddr_storage resolve(const RendezvousConfig& config, socklen_t& length) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  std::string port = std::to_string(config.master_port);
  int status = ::getaddrinfo(config.master_addr.c_str(), port.c_str(), &hints, &found);
  DDPX_REQUIRE(status == 0 && found, "rank {}: cannot resolve MASTER_ADDR '{}': {}", config.rank,
               config.master_addr, gai_strerror(status));
  sockaddr_storage address{};
  std::memcpy(&address, found->ai_addr, found->ai_addrlen);
  length = found->ai_addrlen;
  ::freeaddrinfo(found);
  return address;
}

bool is_loopback(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    return (ntohl(v4.sin_addr.s_addr) >> 24) == 127;
  }
  if (address.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
    return IN6_IS_ADDR_LOOPBACK(&v6.sin6_addr);
  }
  return false;
}

void require_token_or_loopback(const RendezvousConfig& config, const sockaddr_storage& address) {
  if (!config.job_token.empty() || is_loopback(address) || config.allow_without_token) return;
  const char* allowed = std::getenv("DDPX_ALLOW_NO_TOKEN");
  if (allowed && std::string(allowed) == "1") return;
  fail("rank {}: the rendezvous at MASTER_ADDR:MASTER_PORT = {} is reachable from other machines and this job has "
       "no token, so any process that can reach the port could join it; set DDPX_JOB_TOKEN to the same secret on "
       "every rank (for example `export DDPX_JOB_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \\n')` before "
       "starting the launchers), or DDPX_ALLOW_NO_TOKEN=1 on a network you trust",
       config.rank, endpoint(config));
}

struct Hello {
  uint32_t exchange = 0, rank = 0, world = 0;
  std::string token;
  std::vector<uint8_t> payload;
};

bool read_hello(int fd, Hello& hello, Clock::time_point deadline) {
  char magic[sizeof kMagic];
  uint32_t token_length = 0, payload_length = 0;
  if (!transfer(fd, magic, sizeof magic, true, deadline) || std::memcmp(magic, kMagic, sizeof kMagic) != 0 ||
      !read_u32(fd, hello.exchange, deadline) || !read_u32(fd, hello.rank, deadline) ||
      !read_u32(fd, hello.world, deadline) || !read_u32(fd, token_length, deadline) || token_length > kMaxTokenBytes)
    return false;
  hello.token.assign(token_length, '\0');
  if (!transfer(fd, hello.token.data(), token_length, true, deadline) || !read_u32(fd, payload_length, deadline) ||
      payload_length > kMaxPayloadBytes)
    return false;
  hello.payload.resize(payload_length);
  return transfer(fd, hello.payload.data(), payload_length, true, deadline);
}

std::string list_ranks(const std::set<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return text;
}

// Rank 0: the listening socket on MASTER_ADDR:MASTER_PORT (only that address).
Socket listen_on(const RendezvousConfig& config) {
  socklen_t address_length = 0;
  sockaddr_storage address = resolve(config, address_length);
  require_token_or_loopback(config, address);
  Socket listener(::socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  DDPX_REQUIRE(listener.fd() >= 0, "rank 0: cannot create the rendezvous socket: {}", std::strerror(errno));
  int yes = 1;
  ::setsockopt(listener.fd(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  DDPX_REQUIRE(::bind(listener.fd(), reinterpret_cast<sockaddr*>(&address), address_length) == 0,
               "rank 0: cannot listen on MASTER_ADDR:MASTER_PORT = {}: {} (is the port taken by another job? "
               "choose another MASTER_PORT)", endpoint(config), std::strerror(errno));
  DDPX_REQUIRE(::listen(listener.fd(), 128) == 0, "rank 0: listen on {} failed: {}", endpoint(config),
               std::strerror(errno));
  return listener;
}

// Rank 0: accept peers until every rank 1..world-1 has acknowledged the answer. A broadcast answers each peer at
// once; an all-gather holds the peers' connections until every rank is present, then answers all of them.
std::vector<std::vector<uint8_t>> serve(const RendezvousConfig& config, const Socket& listener, Exchange exchange,
                                        const std::vector<uint8_t>& mine) {
  const auto deadline = Clock::now() + config.timeout;
  const uint32_t world = static_cast<uint32_t>(config.world_size);
  std::set<int> served;
  std::map<int, std::pair<Socket, std::vector<uint8_t>>> waiting;  // all-gather: present, not yet answered
  std::vector<std::vector<uint8_t>> gathered;
  while (served.size() < world - 1) {
    for (auto it = waiting.begin(); it != waiting.end();)
      it = peer_gone(it->second.first.fd()) ? waiting.erase(it) : std::next(it);
    if (waiting.size() == world - 1) {  // all-gather: every rank is present; answer all, then collect the acks
      gathered.assign(1, mine);
      std::vector<char> body;
      append_u32(body, static_cast<uint32_t>(mine.size()));
      body.insert(body.end(), mine.begin(), mine.end());
      for (auto& [rank, peer] : waiting) {
        append_u32(body, static_cast<uint32_t>(peer.second.size()));
        body.insert(body.end(), peer.second.begin(), peer.second.end());
        gathered.push_back(std::move(peer.second));
      }
      DDPX_REQUIRE(body.size() <= kMaxGatheredBytes, "rank 0: the rendezvous all-gather of {} ranks holds {} bytes, "
                   "more than the {} it carries", world, body.size(), kMaxGatheredBytes);
      const auto answer_deadline = std::min(deadline, Clock::now() + kPeerPatience);
      for (auto& [rank, peer] : waiting)
        if (write_message(peer.first.fd(), 0, body.data(), body.size(), answer_deadline)) served.insert(rank);
      std::set<int> vanished;
      for (auto& [rank, peer] : waiting)
        if (!served.count(rank) || !acknowledged(peer.first.fd(), answer_deadline)) vanished.insert(rank);
      DDPX_REQUIRE(vanished.empty(), "rank 0: rank(s) {} disconnected from the rendezvous at MASTER_ADDR:MASTER_PORT "
                   "= {} before acknowledging the all-gather, after the other ranks had received it; the job cannot "
                   "start (did that rank die?)", list_ranks(vanished), endpoint(config));
      return gathered;
    }

    std::vector<pollfd> waiters{{listener.fd(), POLLIN, 0}};
    for (auto& entry : waiting) waiters.push_back({entry.second.first.fd(), POLLIN, 0});
    int ready = ::poll(waiters.data(), waiters.size(), remaining_ms(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      std::set<int> missing;
      for (int r = 1; r < config.world_size; ++r)
        if (!served.count(r) && !waiting.count(r)) missing.insert(r);
      fail("rank 0: timed out after {} s waiting at MASTER_ADDR:MASTER_PORT = {} for rank(s) {} to connect "
           "(did they start, with the same MASTER_ADDR/MASTER_PORT?)",
           std::chrono::duration_cast<std::chrono::seconds>(config.timeout).count(), endpoint(config),
           list_ranks(missing));
    }
    if (!(waiters[0].revents & POLLIN)) continue;  // a waiting peer left: dropped at the top of the loop
    Socket peer(::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC));
    if (peer.fd() < 0) continue;
    const auto hello_deadline = std::min(deadline, Clock::now() + kPeerPatience);
    Hello hello;
    if (!read_hello(peer.fd(), hello, hello_deadline)) continue;  // not a ddpx peer: drop it silently

    const int rank = static_cast<int>(hello.rank);
    if (auto earlier = waiting.find(rank); earlier != waiting.end() && peer_gone(earlier->second.first.fd()))
      waiting.erase(earlier);  // the earlier process with this rank has left: this one takes its place
    std::string rejection;
    if (hello.token != config.job_token)
      rejection = "its job token differs (the rendezvous at " + endpoint(config) +
                  " belongs to another job; give each job its own MASTER_PORT, and the same DDPX_JOB_TOKEN to "
                  "every rank of one job)";
    else if (hello.exchange != static_cast<uint32_t>(exchange))
      rejection = "it asks for a " + exchange_name(hello.exchange) + " but rank 0 runs a " +
                  exchange_name(static_cast<uint32_t>(exchange)) + " (another step of the start-up, or another job)";
    else if (hello.world != world)
      rejection = "it expects world size " + std::to_string(hello.world) + " but rank 0 has " +
                  std::to_string(config.world_size) + " (WORLD_SIZE must be the same on every rank)";
    else if (hello.rank == 0 || hello.rank >= world)
      rejection = "rank " + std::to_string(hello.rank) + " is not in 1.." + std::to_string(config.world_size - 1);
    else if (served.count(rank) || waiting.count(rank))
      rejection = "rank " + std::to_string(hello.rank) + " already joined (two processes have RANK=" +
                  std::to_string(hello.rank) + ")";
    if (!rejection.empty()) {
      write_message(peer.fd(), 1, rejection.data(), rejection.size(), hello_deadline);
      continue;
    }
    if (exchange == Exchange::allgather) {
      waiting.emplace(rank, std::make_pair(std::move(peer), std::move(hello.payload)));
      continue;
    }
    if (write_message(peer.fd(), 0, mine.data(), mine.size(), hello_deadline) &&
        acknowledged(peer.fd(), hello_deadline))
      served.insert(rank);
  }
  return {mine};
}


// Ranks > 0: connect (retrying until rank 0 listens), present the hello, receive the body and acknowledge it.
std::vector<uint8_t> join(const RendezvousConfig& config, Exchange exchange, const std::vector<uint8_t>& mine,
                          size_t max_body) {
  socklen_t address_length = 0;
  sockaddr_storage address = resolve(config, address_length);
  require_token_or_loopback(config, address);
  DDPX_REQUIRE(mine.size() <= kMaxPayloadBytes, "rank {}: rendezvous payload of {} bytes is larger than the {} it "
               "carries", config.rank, mine.size(), kMaxPayloadBytes);
  std::vector<char> hello(kMagic, kMagic + sizeof kMagic);
  for (uint32_t value : {static_cast<uint32_t>(exchange), static_cast<uint32_t>(config.rank),
                         static_cast<uint32_t>(config.world_size), static_cast<uint32_t>(config.job_token.size())})
    append_u32(hello, value);
  hello.insert(hello.end(), config.job_token.begin(), config.job_token.end());
  append_u32(hello, static_cast<uint32_t>(mine.size()));
  hello.insert(hello.end(), mine.begin(), mine.end());

  const auto deadline = Clock::now() + config.timeout;
  std::string last_error = "no attempt";
  for (;;) {
    Socket peer(::socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    DDPX_REQUIRE(peer.fd() >= 0, "rank {}: cannot create a socket: {}", config.rank, std::strerror(errno));
    const int connect_error =
        connect_within(peer.fd(), reinterpret_cast<sockaddr*>(&address), address_length, deadline);
    if (connect_error == 0) {
      uint8_t status = 0;
      uint32_t length = 0;
      if (transfer(peer.fd(), hello.data(), hello.size(), false, deadline) &&
          transfer(peer.fd(), &status, 1, true, deadline) && read_u32(peer.fd(), length, deadline) &&
          length <= max_body) {
        std::vector<uint8_t> body(length);
        if (transfer(peer.fd(), body.data(), length, true, deadline)) {
          if (status != 0)
            fail("rank {}: rank 0 at MASTER_ADDR:MASTER_PORT = {} rejected this process: {}", config.rank,
                 endpoint(config), std::string(body.begin(), body.end()));
          uint8_t ack = kAcknowledged;
          if (transfer(peer.fd(), &ack, 1, false, deadline)) return body;
        }
      }
      last_error = "connection closed before the payload arrived";
    } else {
      last_error = std::strerror(connect_error);
    }
    if (remaining_ms(deadline) == 0)
      fail("rank {}: could not reach rank 0 at MASTER_ADDR:MASTER_PORT = {} within {} s (last error: {}); is "
           "rank 0 running, and are MASTER_ADDR/MASTER_PORT the same on every rank?",
           config.rank, endpoint(config), std::chrono::duration_cast<std::chrono::seconds>(config.timeout).count(),
           last_error);
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(100, remaining_ms(deadline))));
  }
}

void require_valid(const RendezvousConfig& config) {
  DDPX_REQUIRE(config.world_size >= 1 && config.rank >= 0 && config.rank < config.world_size,
               "rendezvous: rank {} is not within world size {} (check RANK and WORLD_SIZE)", config.rank,
               config.world_size);
  DDPX_REQUIRE(config.master_port > 0 && config.master_port < 65536,
               "rank {}: MASTER_PORT {} is not a TCP port (1..65535)", config.rank, config.master_port);
}

// Splits an all-gather body (world_size times u32 length + payload) into the payloads.
std::vector<std::vector<uint8_t>> split_gathered(const RendezvousConfig& config, const std::vector<uint8_t>& body) {
  std::vector<std::vector<uint8_t>> payloads;
  size_t at = 0;
  while (at < body.size()) {
    uint32_t length = 0;
    DDPX_REQUIRE(body.size() - at >= sizeof length, "rank {}: the rendezvous all-gather from {} is truncated",
                 config.rank, endpoint(config));
    std::memcpy(&length, body.data() + at, sizeof length);
    at += sizeof length;
    DDPX_REQUIRE(body.size() - at >= length, "rank {}: the rendezvous all-gather from {} is truncated",
                 config.rank, endpoint(config));
    payloads.emplace_back(body.begin() + static_cast<ptrdiff_t>(at),
                          body.begin() + static_cast<ptrdiff_t>(at + length));
    at += length;
  }
  DDPX_REQUIRE(payloads.size() == static_cast<size_t>(config.world_size),
               "rank {}: the rendezvous all-gather from {} holds {} payloads for {} ranks", config.rank,
               endpoint(config), payloads.size(), config.world_size);
  return payloads;
}

}  // namespace

std::vector<uint8_t> rendezvous_broadcast(const RendezvousConfig& config, const std::vector<uint8_t>& payload) {
  require_valid(config);
  if (config.world_size == 1) return payload;
  if (config.rank == 0) {
    DDPX_REQUIRE(payload.size() <= kMaxPayloadBytes, "rendezvous payload of {} bytes is too large",
                 payload.size());
    serve(config, listen_on(config), Exchange::broadcast, payload);
    return payload;
  }
  return join(config, Exchange::broadcast, {}, kMaxPayloadBytes);
}

std::vector<std::vector<uint8_t>> rendezvous_allgather(const RendezvousConfig& config,
                                                       const std::vector<uint8_t>& mine) {
  require_valid(config);
  DDPX_REQUIRE(mine.size() <= kMaxPayloadBytes, "rank {}: rendezvous all-gather payload of {} bytes is larger than "
               "the {} it carries", config.rank, mine.size(), kMaxPayloadBytes);
  if (config.world_size == 1) return {mine};
  if (config.rank == 0) return serve(config, listen_on(config), Exchange::allgather, mine);
  return split_gathered(config, join(config, Exchange::allgather, mine, kMaxGatheredBytes));
}

RendezvousHost::RendezvousHost(const RendezvousConfig& config) : config_(config) {
  require_valid(config);
  DDPX_REQUIRE(config.rank == 0, "rendezvous: rank {} cannot host the rendezvous (rank 0 does)", config.rank);
  if (config.world_size > 1) listener_fd_ = listen_on(config).release();
}

RendezvousHost::~RendezvousHost() {
  if (listener_fd_ >= 0) ::close(listener_fd_);
}

std::vector<std::vector<uint8_t>> RendezvousHost::allgather(const std::vector<uint8_t>& mine) {
  DDPX_REQUIRE(mine.size() <= kMaxPayloadBytes, "rank 0: rendezvous all-gather payload of {} bytes is larger than "
               "the {} it carries", mine.size(), kMaxPayloadBytes);
  if (config_.world_size == 1) return {mine};
  Socket listener(std::exchange(listener_fd_, -1));
  DDPX_REQUIRE(listener.fd() >= 0, "rank 0: this rendezvous host has already run its exchange");
  return serve(config_, listener, Exchange::allgather, mine);
}

void wait_for_rendezvous(const RendezvousConfig& config) {
  require_valid(config);
  if (config.world_size == 1 || config.rank == 0) return;
  socklen_t address_length = 0;
  sockaddr_storage address = resolve(config, address_length);
  require_token_or_loopback(config, address);
  const auto deadline = Clock::now() + config.timeout;
  std::string last_error;
  for (;;) {
    Socket probe(::socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    DDPX_REQUIRE(probe.fd() >= 0, "rank {}: cannot create a socket: {}", config.rank, std::strerror(errno));
    const int error = connect_within(probe.fd(), reinterpret_cast<sockaddr*>(&address), address_length, deadline);
    if (error == 0) return;  // closed at once: rank 0 drops a connection that says nothing
    last_error = std::strerror(error);
    if (remaining_ms(deadline) == 0)
      fail("rank {}: could not reach rank 0 at MASTER_ADDR:MASTER_PORT = {} within {} s (last error: {}); is rank 0 "
           "running, and are MASTER_ADDR/MASTER_PORT the same on every rank?", config.rank, endpoint(config),
           std::chrono::duration_cast<std::chrono::seconds>(config.timeout).count(), last_error);
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(100, remaining_ms(deadline))));
  }
}

}  // namespace ddpx
