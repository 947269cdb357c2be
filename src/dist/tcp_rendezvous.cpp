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

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <list>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include "core/error.hpp"
#include "dist/rendezvous_wire.hpp"
#include "dist/socket_deadline.hpp"

namespace ddpx {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kMaxPayloadBytes = kMaxRendezvousPayloadBytes;
constexpr size_t kMaxGatheredBytes = size_t{64} << 20;
constexpr uint8_t kAcknowledged = 0xAC;
// One connection gets this long to introduce itself, and as long again to take the answer and acknowledge it; all
// connections are served at once, so a silent stranger holds only its own connection.
constexpr auto kPeerPatience = std::chrono::seconds(5);
// Connections still introducing themselves, at most; past it the oldest is dropped.
constexpr size_t kMaxPeers = 256;

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

std::vector<char> message(uint8_t status, const void* body, size_t length) {
  std::vector<char> out(1, static_cast<char>(status));
  append_u32(out, static_cast<uint32_t>(length));
  const char* begin = static_cast<const char*>(body);
  if (length) out.insert(out.end(), begin, begin + length);
  return out;
}

// One connection at rank 0, from accept() to its end. Its socket never blocks; every stage ends at the
// connection's own deadline, so a silent or slow peer holds nothing but its own connection.
struct Peer {
  enum class Stage { hello, answer, acknowledge };
  Socket socket;
  Clock::time_point deadline;
  Stage stage = Stage::hello;
  std::vector<char> received;  // the hello so far (never more than scan_hello() asked for)
  bool authenticated = false;
  int rank = -1;
  std::vector<uint8_t> payload;
  std::vector<char> answer;
  size_t answered = 0;
};

enum class Step { keep, drop, present };

// Rank 0's side of one exchange: accepts peers and serves all of them at once (see the header's guarantees).
class RendezvousServer {
 public:
  RendezvousServer(const RendezvousConfig& config, const Socket& listener, Exchange exchange,
                   const std::vector<uint8_t>& mine)
      : config_(config), listener_(listener), exchange_(exchange), mine_(mine),
        world_(static_cast<uint32_t>(config.world_size)), deadline_(Clock::now() + config.timeout) {
    ::fcntl(listener_.fd(), F_SETFL, ::fcntl(listener_.fd(), F_GETFL) | O_NONBLOCK);
  }

  std::vector<std::vector<uint8_t>> run() {
    while (served_.size() < world_ - 1) {
      for (auto it = present_.begin(); it != present_.end();)
        it = peer_gone(it->second.socket.fd()) ? present_.erase(it) : std::next(it);
      if (exchange_ == Exchange::allgather && present_.size() == world_ - 1) return answer_all();
      const auto now = Clock::now();
      peers_.remove_if([&](const Peer& peer) { return now >= peer.deadline; });
      if (now >= deadline_) fail_timeout();

      std::vector<pollfd> waiters{{listener_.fd(), POLLIN, 0}};
      std::vector<Peer*> polled;
      auto wake = deadline_;
      for (Peer& peer : peers_) {
        waiters.push_back({peer.socket.fd(), static_cast<short>(peer.stage == Peer::Stage::answer ? POLLOUT : POLLIN), 0});
        polled.push_back(&peer);
        wake = std::min(wake, peer.deadline);
      }
      for (auto& [rank, peer] : present_) waiters.push_back({peer.socket.fd(), POLLIN, 0});
      if (::poll(waiters.data(), waiters.size(), remaining_ms(wake)) <= 0) continue;
      for (size_t i = 0; i < polled.size(); ++i)
        if (waiters[i + 1].revents) advance(*polled[i]);
      peers_.remove_if([](const Peer& peer) { return peer.socket.fd() < 0; });
      if (waiters[0].revents & POLLIN) accept_all();
    }
    return {mine_};
  }

 private:
  // Takes every pending connection; past kMaxPeers the oldest one still introducing itself is dropped, so a
  // flood of idle connections cannot exhaust rank 0's descriptors.
  void accept_all() {
    for (;;) {
      Socket peer(::accept4(listener_.fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
      if (peer.fd() < 0) {
        if ((errno == EMFILE || errno == ENFILE) && drop_oldest_stranger()) continue;
        return;
      }
      if (peers_.size() >= kMaxPeers) drop_oldest_stranger();
      Peer& added = peers_.emplace_back();
      added.socket = std::move(peer);
      added.deadline = std::min(deadline_, Clock::now() + kPeerPatience);
    }
  }

  bool drop_oldest_stranger() {
    const auto oldest = std::find_if(peers_.begin(), peers_.end(),
                                     [](const Peer& peer) { return peer.stage == Peer::Stage::hello; });
    if (oldest == peers_.end()) return false;
    peers_.erase(oldest);
    return true;
  }

  void advance(Peer& peer) {
    const Step step = peer.stage == Peer::Stage::hello ? read_hello(peer) : answer(peer);
    if (step == Step::present) {
      Peer& slot = present_[peer.rank];
      slot = std::move(peer);
      slot.stage = Peer::Stage::answer;
    }
    if (step != Step::keep) peer.socket = Socket();  // removed by run()
  }

  // Reads no more than scan_hello() asks for: the header (at most kHelloPrefixBytes + token + 4 bytes) first,
  // the payload only from a peer whose token and fields passed.
  Step read_hello(Peer& peer) {
    for (;;) {
      const HelloScan scan = scan_hello(peer.received);
      if (scan.stage == HelloScan::Stage::malformed) return Step::drop;  // not a ddpx peer: dropped silently
      if (scan.stage != HelloScan::Stage::need_more && !peer.authenticated) {
        const std::string rejection = rejection_of(scan.header);
        if (!rejection.empty()) {
          const std::vector<char> refusal = message(1, rejection.data(), rejection.size());
          (void)!::send(peer.socket.fd(), refusal.data(), refusal.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
          return Step::drop;
        }
        peer.authenticated = true;
        peer.rank = static_cast<int>(scan.header.rank);
      }
      if (scan.stage == HelloScan::Stage::complete) return hello_complete(peer, scan.header);
      const size_t had = peer.received.size();
      peer.received.resize(scan.need);
      const ssize_t got = ::recv(peer.socket.fd(), peer.received.data() + had, scan.need - had, 0);
      peer.received.resize(had + static_cast<size_t>(std::max<ssize_t>(got, 0)));
      if (got > 0) continue;
      return got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? Step::keep : Step::drop;
    }
  }

  Step hello_complete(Peer& peer, const HelloHeader& header) {
    if (rank_taken(peer.rank)) {  // another connection of this rank completed first
      const std::string rejection = duplicate_rank(header.rank);
      const std::vector<char> refusal = message(1, rejection.data(), rejection.size());
      (void)!::send(peer.socket.fd(), refusal.data(), refusal.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      return Step::drop;
    }
    const auto payload_begin = peer.received.end() - static_cast<ptrdiff_t>(header.payload_length);
    peer.payload.assign(payload_begin, peer.received.end());
    peer.received = {};
    if (exchange_ == Exchange::allgather) return Step::present;
    peer.stage = Peer::Stage::answer;
    peer.answer = message(0, mine_.data(), mine_.size());
    peer.deadline = std::min(deadline_, Clock::now() + kPeerPatience);
    return answer(peer);
  }

  // Writes the answer, then waits for the acknowledgement; a rank counts as served only then.
  Step answer(Peer& peer) {
    while (peer.stage == Peer::Stage::answer) {
      const ssize_t sent = ::send(peer.socket.fd(), peer.answer.data() + peer.answered,
                                  peer.answer.size() - peer.answered, MSG_NOSIGNAL);
      if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return Step::keep;
      if (sent <= 0) return Step::drop;
      peer.answered += static_cast<size_t>(sent);
      if (peer.answered == peer.answer.size()) peer.stage = Peer::Stage::acknowledge;
    }
    uint8_t ack = 0;
    const ssize_t got = ::recv(peer.socket.fd(), &ack, 1, 0);
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return Step::keep;
    if (got == 1 && ack == kAcknowledged) served_.insert(peer.rank);
    return Step::drop;
  }

  bool rank_taken(int rank) {
    if (auto earlier = present_.find(rank); earlier != present_.end() && peer_gone(earlier->second.socket.fd()))
      present_.erase(earlier);  // the earlier process with this rank has left: this one takes its place
    return served_.count(rank) || present_.count(rank);
  }

  std::string duplicate_rank(uint32_t rank) const {
    return "rank " + std::to_string(rank) + " already joined (two processes have RANK=" + std::to_string(rank) + ")";
  }

  std::string rejection_of(const HelloHeader& hello) {
    if (!same_token(hello.token, config_.job_token))
      return "its job token differs (the rendezvous at " + endpoint(config_) +
             " belongs to another job; give each job its own MASTER_PORT, and the same DDPX_JOB_TOKEN to every rank "
             "of one job)";
    if (hello.exchange != static_cast<uint32_t>(exchange_))
      return "it asks for a " + exchange_name(hello.exchange) + " but rank 0 runs a " +
             exchange_name(static_cast<uint32_t>(exchange_)) + " (another step of the start-up, or another job)";
    if (hello.world != world_)
      return "it expects world size " + std::to_string(hello.world) + " but rank 0 has " +
             std::to_string(config_.world_size) + " (WORLD_SIZE must be the same on every rank)";
    if (hello.rank == 0 || hello.rank >= world_)
      return "rank " + std::to_string(hello.rank) + " is not in 1.." + std::to_string(config_.world_size - 1);
    if (exchange_ == Exchange::broadcast && hello.payload_length != 0)
      return "its broadcast hello carries a payload of " + std::to_string(hello.payload_length) + " bytes (none is sent)";
    if (rank_taken(static_cast<int>(hello.rank))) return duplicate_rank(hello.rank);
    return "";
  }

  // All-gather: every rank is present; answer all of them at once, then collect every acknowledgement.
  std::vector<std::vector<uint8_t>> answer_all() {
    std::vector<std::vector<uint8_t>> gathered(1, mine_);
    std::vector<char> body;
    append_u32(body, static_cast<uint32_t>(mine_.size()));
    body.insert(body.end(), mine_.begin(), mine_.end());
    for (auto& [rank, peer] : present_) {
      append_u32(body, static_cast<uint32_t>(peer.payload.size()));
      body.insert(body.end(), peer.payload.begin(), peer.payload.end());
      gathered.push_back(std::move(peer.payload));
    }
    DDPX_REQUIRE(body.size() <= kMaxGatheredBytes, "rank 0: the rendezvous all-gather of {} ranks holds {} bytes, "
                 "more than the {} it carries", world_, body.size(), kMaxGatheredBytes);
    const std::vector<char> answer_message = message(0, body.data(), body.size());
    const auto answer_deadline = std::min(deadline_, Clock::now() + kPeerPatience);
    std::vector<Peer*> answering;
    for (auto& [rank, peer] : present_) {
      peer.answer = answer_message;
      peer.deadline = answer_deadline;
      answering.push_back(&peer);
    }
    while (!answering.empty() && Clock::now() < answer_deadline) {
      std::vector<pollfd> waiters;
      for (Peer* peer : answering)
        waiters.push_back({peer->socket.fd(), static_cast<short>(peer->stage == Peer::Stage::answer ? POLLOUT : POLLIN), 0});
      if (::poll(waiters.data(), waiters.size(), remaining_ms(answer_deadline)) <= 0) continue;
      std::vector<Peer*> still;
      for (size_t i = 0; i < answering.size(); ++i)
        if (!waiters[i].revents || answer(*answering[i]) == Step::keep) still.push_back(answering[i]);
      answering = std::move(still);
    }
    std::set<int> vanished;
    for (auto& [rank, peer] : present_)
      if (!served_.count(rank)) vanished.insert(rank);
    DDPX_REQUIRE(vanished.empty(), "rank 0: rank(s) {} disconnected from the rendezvous at MASTER_ADDR:MASTER_PORT "
                 "= {} before acknowledging the all-gather, after the other ranks had received it; the job cannot "
                 "start (did that rank die?)", list_ranks(vanished), endpoint(config_));
    return gathered;
  }

  [[noreturn]] void fail_timeout() const {
    std::set<int> missing;
    for (int r = 1; r < config_.world_size; ++r)
      if (!served_.count(r) && !present_.count(r)) missing.insert(r);
    fail("rank 0: timed out after {} s waiting at MASTER_ADDR:MASTER_PORT = {} for rank(s) {} to connect "
         "(did they start, with the same MASTER_ADDR/MASTER_PORT?)",
         std::chrono::duration_cast<std::chrono::seconds>(config_.timeout).count(), endpoint(config_),
         list_ranks(missing));
  }

  const RendezvousConfig& config_;
  const Socket& listener_;
  const Exchange exchange_;
  const std::vector<uint8_t>& mine_;
  const uint32_t world_;
  const Clock::time_point deadline_;
  std::set<int> served_;
  std::list<Peer> peers_;      // connections being served
  std::map<int, Peer> present_;  // all-gather: complete hellos, held until every rank is present
};

std::vector<std::vector<uint8_t>> serve(const RendezvousConfig& config, const Socket& listener, Exchange exchange,
                                        const std::vector<uint8_t>& mine) {
  return RendezvousServer(config, listener, exchange, mine).run();
}


// Ranks > 0: connect (retrying until rank 0 listens), present the hello, receive the body and acknowledge it.
std::vector<uint8_t> join(const RendezvousConfig& config, Exchange exchange, const std::vector<uint8_t>& mine,
                          size_t max_body) {
  socklen_t address_length = 0;
  sockaddr_storage address = resolve(config, address_length);
  require_token_or_loopback(config, address);
  DDPX_REQUIRE(mine.size() <= kMaxPayloadBytes, "rank {}: rendezvous payload of {} bytes is larger than the {} it "
               "carries", config.rank, mine.size(), kMaxPayloadBytes);
  std::vector<char> hello(kRendezvousMagic, kRendezvousMagic + sizeof kRendezvousMagic);
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
