// find_free_ports(): bind every port of a candidate run at once (SO_REUSEADDR off, so a port in TIME_WAIT or
// listened on counts as taken), release them, and return the base. See Note [Ports outside the ephemeral range].
#include "dist/free_ports.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <vector>

#include "core/error.hpp"
#include "dist/ipv4_address.hpp"

namespace ddpx {
namespace {

constexpr int kLowestChosenPort = 10000;
constexpr int kRandomTries = 64;
constexpr int kKernelTries = 16;

// A socket bound to address:port (port 0: the kernel's choice), or -1 when the port is taken.
int bind_socket(const in_addr& address, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  DDPX_REQUIRE(fd >= 0, "launcher: cannot create a socket: {}", std::strerror(errno));
  sockaddr_in bound = ipv4_socket_address(address, port);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&bound), sizeof bound) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

int bound_port(int fd) {
  sockaddr_in bound{};
  socklen_t length = sizeof bound;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) return 0;
  return ntohs(bound.sin_port);
}

// Whether base .. base + count - 1 can all be bound at once (first_fd, when given, already holds base).
bool run_is_free(const in_addr& address, int base, int count, int first_fd = -1) {
  if (base <= 0 || base + count - 1 > 65535) {
    if (first_fd >= 0) ::close(first_fd);
    return false;
  }
  std::vector<int> held;
  if (first_fd >= 0) held.push_back(first_fd);
  bool free = true;
  for (int port = base + static_cast<int>(held.size()); port < base + count && free; ++port) {
    int fd = bind_socket(address, port);
    if (fd < 0) free = false;
    else held.push_back(fd);
  }
  for (int fd : held) ::close(fd);
  return free;
}

}  // namespace

int find_free_ports_in(const std::string& address, int count, PortRange preferred) {
  DDPX_REQUIRE(count >= 1 && count <= 64, "launcher: asked for {} consecutive free ports (1 to 64)", count);
  const std::optional<in_addr> ipv4 = parse_ipv4(address);
  DDPX_REQUIRE(ipv4.has_value(), "launcher: cannot find a free TCP port on '{}' (an IPv4 address is expected)",
               address);
  const in_addr parsed = *ipv4;

  const int last_base = preferred.high - count + 1;
  if (preferred.low > 0 && last_base >= preferred.low) {
    std::mt19937 pick(std::random_device{}());
    std::uniform_int_distribution<int> base(preferred.low, last_base);
    for (int attempt = 0; attempt < kRandomTries; ++attempt) {
      int candidate = base(pick);
      if (run_is_free(parsed, candidate, count)) return candidate;
    }
  }
  for (int attempt = 0; attempt < kKernelTries; ++attempt) {
    int fd = bind_socket(parsed, 0);
    DDPX_REQUIRE(fd >= 0, "launcher: cannot bind a TCP socket on '{}': {}", address, std::strerror(errno));
    int candidate = bound_port(fd);
    if (run_is_free(parsed, candidate, count, fd)) return candidate;
  }
  fail("launcher: no {} consecutive free TCP ports on '{}' after {} tries; pass --master-port explicitly", count,
       address, kRandomTries + kKernelTries);
}

int ephemeral_port_range_start() {
  std::ifstream file("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0, high = 0;
  if (file >> low >> high && low > 0) return low;
  return 32768;
}

int find_free_ports(const std::string& address, int count) {
  return find_free_ports_in(address, count, PortRange{kLowestChosenPort, ephemeral_port_range_start() - 1});
}

int find_free_port(const std::string& address) { return find_free_ports(address, 1); }

}  // namespace ddpx
