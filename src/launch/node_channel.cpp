// Node channel: address resolution, bind/connect with flag-naming errors, non-blocking line connections.
#include "launch/node_channel.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "core/error.hpp"
#include "dist/ipv4_address.hpp"
#include "dist/socket_deadline.hpp"

namespace ddpx {
namespace {

using Clock = std::chrono::steady_clock;

sockaddr_in ipv4(const std::string& address, int port) {
  const std::optional<in_addr> parsed = parse_ipv4(address);
  DDPX_REQUIRE(parsed.has_value(), "launcher: '{}' is not an IPv4 address", address);
  return ipv4_socket_address(*parsed, port);
}

// A bound (not yet listening) socket, or a ddpx::Error naming the flag at fault.
int bind_or_explain(const std::string& address, int port, std::string_view what) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  DDPX_REQUIRE(fd >= 0, "launcher: cannot create a socket: {}", std::strerror(errno));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);  // a just-ended job's TIME_WAIT is no conflict
  sockaddr_in socket_address = ipv4(address, port);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&socket_address), sizeof socket_address) == 0) return fd;
  const int error = errno;
  ::close(fd);
  if (error == EADDRINUSE)
    fail("--master-port: port {} on {} ({}) is in use (another job, or a launcher of this one still running?); "
         "choose another --master-port (ddpx uses it and the port after it)", port, address, what);
  if (error == EADDRNOTAVAIL)
    fail("--master-addr {} is not an address of this host, so node 0 (--node-rank 0) cannot serve on it: run node "
         "0 on the host that has this address, or give one of this host's addresses", address);
  fail("--master-port {}: cannot bind {}:{} ({}): {}", port, address, port, what, std::strerror(error));
}

}  // namespace

std::string resolve_ipv4(const std::string& host) {
  DDPX_REQUIRE(!host.empty(), "--master-addr is empty: give node 0's address or host name");
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int status = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  DDPX_REQUIRE(status == 0 && found, "--master-addr {} does not resolve to an IPv4 address ({}): give node 0's "
               "address or a host name this host can resolve (/etc/hosts, DNS)", host, ::gai_strerror(status));
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, text, sizeof text);
  ::freeaddrinfo(found);
  return text;
}

int listen_on(const std::string& address, int port) {
  int fd = bind_or_explain(address, port, "the launchers' control channel");
  DDPX_REQUIRE(::listen(fd, 64) == 0, "--master-port {}: cannot listen on {}:{}: {}", port, address, port,
               std::strerror(errno));
  ::fcntl(fd, F_SETFL, O_NONBLOCK);
  return fd;
}

void require_port_free(const std::string& address, int port, std::string_view what) {
  ::close(bind_or_explain(address, port, what));
}

int connect_within(const std::string& address, int port, Clock::time_point deadline, std::string& last_error) {
  const sockaddr_in target = ipv4(address, port);
  last_error = "no attempt was made";
  for (;;) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    DDPX_REQUIRE(fd >= 0, "launcher: cannot create a socket: {}", std::strerror(errno));
    // One attempt waits at most a second, then the connection is tried afresh until the deadline.
    const Clock::time_point attempt_deadline = std::min(deadline, Clock::now() + std::chrono::seconds(1));
    const int error =
        connect_within(fd, reinterpret_cast<const sockaddr*>(&target), sizeof target, attempt_deadline);
    if (error == 0) {
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return fd;
    }
    last_error = std::strerror(error);
    ::close(fd);
    if (Clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

std::string peer_address(int fd) {
  sockaddr_in peer{};
  socklen_t length = sizeof peer;
  char text[INET_ADDRSTRLEN] = "?";
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &length) == 0)
    ::inet_ntop(AF_INET, &peer.sin_addr, text, sizeof text);
  return text;
}

LineConnection::LineConnection(int fd) : fd_(fd) {
  if (fd_ >= 0) ::fcntl(fd_, F_SETFL, O_NONBLOCK);
}
LineConnection::~LineConnection() { close(); }
LineConnection::LineConnection(LineConnection&& other) noexcept { *this = std::move(other); }
LineConnection& LineConnection::operator=(LineConnection&& other) noexcept {
  std::swap(fd_, other.fd_);
  std::swap(lost_, other.lost_);
  std::swap(pending_, other.pending_);
  std::swap(last_heard_, other.last_heard_);
  return *this;
}

void LineConnection::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool LineConnection::receive(std::vector<std::string>& lines) {
  if (fd_ < 0) return false;
  // Read even after a failed send: the peer's last lines (its verdict) may still wait in the socket.
  for (;;) {
    char buffer[4096];
    ssize_t got = ::recv(fd_, buffer, sizeof buffer, 0);
    if (got > 0) {
      last_heard_ = Clock::now();
      pending_.append(buffer, static_cast<size_t>(got));
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    lost_ = true;  // closed (0) or failed
    break;
  }
  size_t start = 0;
  for (size_t newline; (newline = pending_.find('\n', start)) != std::string::npos; start = newline + 1)
    lines.push_back(pending_.substr(start, newline - start));
  pending_.erase(0, start);
  if (pending_.size() > kMaxLineBytes) lost_ = true;
  return !lost_;
}

bool LineConnection::send(std::string_view line) {
  if (!open()) return false;
  std::string message(line.substr(0, kMaxLineBytes - 1));
  for (char& c : message)
    if (c == '\n') c = ' ';
  message += '\n';
  size_t sent = 0;
  while (sent < message.size()) {
    ssize_t done = ::send(fd_, message.data() + sent, message.size() - sent, MSG_NOSIGNAL);
    if (done < 0 && errno == EINTR) continue;
    if (done <= 0) {
      lost_ = true;
      return false;
    }
    sent += static_cast<size_t>(done);
  }
  return true;
}

}  // namespace ddpx
