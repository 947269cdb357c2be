// find_free_ports(): every port of the run it returns can be listened on at once, the run lies below the kernel's
// ephemeral range (Note [Ports outside the ephemeral range]), a port held by someone else is never handed out
// (the kernel's range is the fallback), and bad arguments are user errors naming the address or the count.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "dist/free_ports.hpp"
#include "error_expect.hpp"

namespace ddpx {
namespace {

// A listening socket on 127.0.0.1:port, or -1.
int listen_on(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(fd, 1) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

int ephemeral_start() {
  std::ifstream file("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 32768, high = 0;
  file >> low >> high;
  return low;
}

TEST(FreePorts, EveryPortOfTheRunCanBeListenedOnAtOnce) {
  const int base = find_free_ports("127.0.0.1", 3);
  std::vector<int> held;
  for (int port = base; port < base + 3; ++port) held.push_back(listen_on(port));
  for (size_t i = 0; i < held.size(); ++i) EXPECT_GE(held[i], 0) << "port " << base + static_cast<int>(i);
  for (int fd : held)
    if (fd >= 0) ::close(fd);
}

TEST(FreePorts, RunsLieBelowTheEphemeralRange) {
  const int start = ephemeral_start();
  if (start <= 10000 + 2) GTEST_SKIP() << "the ephemeral range starts at " << start << ": no room below it";
  for (int i = 0; i < 20; ++i) {
    const int base = find_free_ports("127.0.0.1", 2);
    EXPECT_GE(base, 10000);
    EXPECT_LE(base + 1, start - 1) << "run " << base << ".." << base + 1 << " reaches the ephemeral range";
  }
}

// Eight ports found free, the fourth of them then held: of the 4-port runs inside those eight, only the last one
// (base + 4) leaves the held port out, so the picker returns it or, after its random draws, a kernel-assigned run.
TEST(FreePorts, APortInUseIsNeverHandedOut) {
  const int base = find_free_ports("127.0.0.1", 8);
  const int held_port = base + 3;
  const int fd = listen_on(held_port);
  ASSERT_GE(fd, 0);
  for (int i = 0; i < 20; ++i) {
    const int run = find_free_ports_in("127.0.0.1", 4, PortRange{base, base + 7});
    EXPECT_FALSE(run <= held_port && held_port < run + 4) << "run at " << run << " holds " << held_port;
    EXPECT_TRUE(run == base + 4 || run >= ephemeral_start()) << "run at " << run << ", base " << base;
  }
  ::close(fd);
}

TEST(FreePorts, APreferredRangeTooNarrowForTheRunFallsBackToTheKernelsPorts) {
  const int run = find_free_ports_in("127.0.0.1", 4, PortRange{20000, 20002});
  EXPECT_GE(run, ephemeral_start());
}

TEST(FreePorts, BadArgumentsAreUserErrors) {
  testing::expect_error([] { find_free_ports("not-an-address", 1); }, {"'not-an-address'", "IPv4"});
  testing::expect_error([] { find_free_ports("127.0.0.1", 0); }, {"0 consecutive", "1 to 64"});
}

}  // namespace
}  // namespace ddpx
