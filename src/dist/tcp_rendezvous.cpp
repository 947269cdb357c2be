// TCP rendezvous: a tiny length-prefixed protocol over one connection per peer.
//   peer -> rank 0: "DDPXRDV1" u32 rank, u32 world_size, u32 token_length, token bytes
//   rank 0 -> peer: u8 status (0 accepted, 1 rejected), u32 length, payload or rejection reason
// All integers little-endian as the hosts are; both sides are ddpx of the same build.
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
#include <cstring>
#include <set>
#include <thread>

#include "core/error.hpp"

namespace ddpx {
namespace {

using Clock = std::chrono::steady_clock;
constexpr char kMagic[8] = {'D', 'D', 'P', 'X', 'R', 'D', 'V', '1'};
constexpr uint32_t kMaxTokenBytes = 4096;
constexpr uint32_t kMaxPayloadBytes = 1 << 20;

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

 private:
  int fd_;
};

std::string endpoint(const RendezvousConfig& config) {
  return config.master_addr + ":" + std::to_string(config.master_port);
}

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
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

bool write_message(int fd, uint8_t status, const void* body, uint32_t length, Clock::time_point deadline) {
  std::vector<char> message(1 + sizeof length + length);
  message[0] = static_cast<char>(status);
  std::memcpy(message.data() + 1, &length, sizeof length);
  if (length) std::memcpy(message.data() + 1 + sizeof length, body, length);
  return transfer(fd, message.data(), message.size(), false, deadline);
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

// Rank 0: accept peers until every rank 1..world-1 has the payload.
void serve(const RendezvousConfig& config, const std::vector<uint8_t>& payload) {
  socklen_t address_length = 0;
  sockaddr_storage address = resolve(config, address_length);
  Socket listener(::socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  DDPX_REQUIRE(listener.fd() >= 0, "rank 0: cannot create the rendezvous socket: {}", std::strerror(errno));
  int yes = 1;
  ::setsockopt(listener.fd(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  DDPX_REQUIRE(::bind(listener.fd(), reinterpret_cast<sockaddr*>(&address), address_length) == 0,
               "rank 0: cannot listen on MASTER_ADDR:MASTER_PORT = {}: {} (is the port taken by another job? "
               "choose another MASTER_PORT)", endpoint(config), std::strerror(errno));
  DDPX_REQUIRE(::listen(listener.fd(), 128) == 0, "rank 0: listen on {} failed: {}", endpoint(config),
               std::strerror(errno));

  const auto deadline = Clock::now() + config.timeout;
  std::set<int> served;
  while (static_cast<int>(served.size()) < config.world_size - 1) {
    pollfd waiter{listener.fd(), POLLIN, 0};
    int ready = ::poll(&waiter, 1, remaining_ms(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      std::string missing;
      for (int r = 1; r < config.world_size; ++r)
        if (!served.count(r)) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      fail("rank 0: timed out after {} s waiting at MASTER_ADDR:MASTER_PORT = {} for rank(s) {} to connect "
           "(did they start, with the same MASTER_ADDR/MASTER_PORT?)",
           std::chrono::duration_cast<std::chrono::seconds>(config.timeout).count(), endpoint(config), missing);
    }
    Socket peer(::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC));
    if (peer.fd() < 0) continue;
    // One peer gets a few seconds to introduce itself, so a silent stranger cannot stall the job.
    auto hello_deadline = std::min(deadline, Clock::now() + std::chrono::seconds(5));
    char magic[sizeof kMagic];
    uint32_t peer_rank = 0, peer_world = 0, token_length = 0;
    if (!transfer(peer.fd(), magic, sizeof magic, true, hello_deadline) ||
        std::memcmp(magic, kMagic, sizeof kMagic) != 0 || !read_u32(peer.fd(), peer_rank, hello_deadline) ||
        !read_u32(peer.fd(), peer_world, hello_deadline) || !read_u32(peer.fd(), token_length, hello_deadline) ||
        token_length > kMaxTokenBytes)
      continue;  // not a ddpx peer: drop it silently
    std::string token(token_length, '\0');
    if (!transfer(peer.fd(), token.data(), token_length, true, hello_deadline)) continue;

    std::string rejection;
    if (token != config.job_token)
      rejection = "its job token differs (the rendezvous at " + endpoint(config) +
                  " belongs to another job; give each job its own MASTER_PORT)";
    else if (static_cast<int>(peer_world) != config.world_size)
      rejection = "it expects world size " + std::to_string(peer_world) + " but rank 0 has " +
                  std::to_string(config.world_size) + " (WORLD_SIZE must be the same on every rank)";
    else if (peer_rank == 0 || static_cast<int>(peer_rank) >= config.world_size)
      rejection = "rank " + std::to_string(peer_rank) + " is not in 1.." + std::to_string(config.world_size - 1);
    else if (served.count(static_cast<int>(peer_rank)))
      rejection = "rank " + std::to_string(peer_rank) + " already joined (two processes have RANK=" +
                  std::to_string(peer_rank) + ")";
    if (!rejection.empty()) {
      write_message(peer.fd(), 1, rejection.data(), static_cast<uint32_t>(rejection.size()), hello_deadline);
      continue;
    }
    if (write_message(peer.fd(), 0, payload.data(), static_cast<uint32_t>(payload.size()), hello_deadline))
      served.insert(static_cast<int>(peer_rank));
  }
}

// connect() that gives up at the deadline: a blocking connect to an address that drops SYNs (a firewall, a wrong
// MASTER_ADDR) would wait for the kernel's retries, about two minutes, whatever --timeout says. Returns 0 or an
// errno value; the socket is blocking again afterwards.
int connect_within(int fd, const sockaddr* address, socklen_t length, Clock::time_point deadline) {
  const int flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  int error = ::connect(fd, address, length) == 0 ? 0 : errno;
  if (error == EINPROGRESS) {
    pollfd waiter{fd, POLLOUT, 0};
    int ready = 0;
    do ready = ::poll(&waiter, 1, remaining_ms(deadline));
    while (ready < 0 && errno == EINTR);
    socklen_t size = sizeof error;
    if (ready <= 0) error = ready == 0 ? ETIMEDOUT : errno;
    else if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) != 0) error = errno;
  }
  ::fcntl(fd, F_SETFL, flags);
  return error;
}

// Ranks > 0: connect (retrying until rank 0 listens) and receive the payload.
std::vector<uint8_t> join(const RendezvousConfig& config) {
  socklen_t address_length = 0;
  sockaddr_storage address = resolve(config, address_length);
  const auto deadline = Clock::now() + config.timeout;
  std::string last_error = "no attempt";
  for (;;) {
    Socket peer(::socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    DDPX_REQUIRE(peer.fd() >= 0, "rank {}: cannot create a socket: {}", config.rank, std::strerror(errno));
    const int connect_error =
        connect_within(peer.fd(), reinterpret_cast<sockaddr*>(&address), address_length, deadline);
    if (connect_error == 0) {
      std::vector<char> hello(kMagic, kMagic + sizeof kMagic);
      for (uint32_t value : {static_cast<uint32_t>(config.rank), static_cast<uint32_t>(config.world_size),
                             static_cast<uint32_t>(config.job_token.size())}) {
        const char* bytes = reinterpret_cast<const char*>(&value);
        hello.insert(hello.end(), bytes, bytes + sizeof value);
      }
      hello.insert(hello.end(), config.job_token.begin(), config.job_token.end());
      uint8_t status = 0;
      uint32_t length = 0;
      if (transfer(peer.fd(), hello.data(), hello.size(), false, deadline) &&
          transfer(peer.fd(), &status, 1, true, deadline) && read_u32(peer.fd(), length, deadline) &&
          length <= kMaxPayloadBytes) {
        std::vector<uint8_t> body(length);
        if (transfer(peer.fd(), body.data(), length, true, deadline)) {
          if (status == 0) return body;
          fail("rank {}: rank 0 at MASTER_ADDR:MASTER_PORT = {} rejected this process: {}", config.rank,
               endpoint(config), std::string(body.begin(), body.end()));
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

}  // namespace

std::vector<uint8_t> rendezvous_broadcast(const RendezvousConfig& config, const std::vector<uint8_t>& payload) {
  DDPX_REQUIRE(config.world_size >= 1 && config.rank >= 0 && config.rank < config.world_size,
               "rendezvous: rank {} is not within world size {} (check RANK and WORLD_SIZE)", config.rank,
               config.world_size);
  DDPX_REQUIRE(config.master_port > 0 && config.master_port < 65536,
               "rank {}: MASTER_PORT {} is not a TCP port (1..65535)", config.rank, config.master_port);
  if (config.world_size == 1) return payload;
  if (config.rank == 0) {
    DDPX_REQUIRE(payload.size() <= kMaxPayloadBytes, "rendezvous payload of {} bytes is too large",
                 payload.size());
    serve(config, payload);
    return payload;
  }
  return join(config);
}

}  // namespace ddpx
