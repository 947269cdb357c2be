// find_free_ports(): every port of the run it returns can be listened on at once, the run lies below the kernel's
// ephemeral range (Note [Ports outside the ephemeral range]), a port held by someone else is never handed out
// (the kernel's range is the fallback), and bad arguments are user errors naming the address or the count.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "dist/free_ports.hpp"
#include "error_expect.hpp"
#include "launch/node_channel.hpp"

namespace ddpx {
namespace {

TEST(FreePorts, EveryPortOfTheRunCanBeListenedOnAtOnce) {
  const int base = find_free_ports("127.0.0.1", 3);
  std::vector<int> held;
  for (int port = base; port < base + 3; ++port) EXPECT_NO_THROW(held.push_back(listen_on("127.0.0.1", port)));
  EXPECT_EQ(held.size(), 3u);
  for (int fd : held) ::close(fd);
}

TEST(FreePorts, RunsLieBelowTheEphemeralRange) {
  const int start = ephemeral_port_range_start();
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
  const int fd = listen_on("127.0.0.1", held_port);
  for (int i = 0; i < 20; ++i) {
    const int run = find_free_ports_in("127.0.0.1", 4, PortRange{base, base + 7});
    EXPECT_FALSE(run <= held_port && held_port < run + 4) << "run at " << run << " holds " << held_port;
    EXPECT_TRUE(run == base + 4 || run >= ephemeral_port_range_start()) << "run at " << run << ", base " << base;
  }
  ::close(fd);
}

TEST(FreePorts, APreferredRangeTooNarrowForTheRunFallsBackToTheKernelsPorts) {
  const int run = find_free_ports_in("127.0.0.1", 4, PortRange{20000, 20002});
  EXPECT_GE(run, ephemeral_port_range_start());
}

TEST(FreePorts, BadArgumentsAreUserErrors) {
  testing::expect_error([] { find_free_ports("not-an-address", 1); }, {"'not-an-address'", "IPv4"});
  testing::expect_error([] { find_free_ports("127.0.0.1", 0); }, {"0 consecutive", "1 to 64"});
}

}  // namespace
}  // namespace ddpx
