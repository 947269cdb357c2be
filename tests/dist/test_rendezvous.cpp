// TCP rendezvous on loopback, ranks as threads of this process: delivery (broadcast and all-gather), rejection of
// another job's peer, world-size and exchange mismatch, the timeout messages that name MASTER_ADDR:MASTER_PORT and
// the rank, and issue 13 point 7 (ranks compared unsigned, a rank served only once it acknowledged, no token off
// loopback).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <future>
#include <thread>

#include "core/error.hpp"
#include "error_expect.hpp"
#include "dist/free_ports.hpp"
#include "dist/tcp_rendezvous.hpp"

namespace ddpx {
namespace {

using namespace std::chrono_literals;

// Rank `rank` of `world` meeting rank 0 at 127.0.0.1:port under `token`, waiting at most `timeout`.
RendezvousConfig config_for(int port, int rank, int world, std::string token = "job-a",
                            std::chrono::milliseconds timeout = 5s) {
  return RendezvousConfig{"127.0.0.1", port, rank, world, std::move(token), timeout};
}
RendezvousConfig config_for(int port, int rank, int world, std::chrono::milliseconds timeout) {
  return config_for(port, rank, world, "job-a", timeout);
}

// A rank in a thread of its own (the test's thread is another rank, or a hand-made peer).
std::future<std::vector<uint8_t>> broadcast_in_thread(const RendezvousConfig& config, std::vector<uint8_t> payload) {
  return std::async(std::launch::async, [=] { return rendezvous_broadcast(config, payload); });
}
std::future<std::vector<std::vector<uint8_t>>> allgather_in_thread(const RendezvousConfig& config,
                                                                   std::vector<uint8_t> payload) {
  return std::async(std::launch::async, [=] { return rendezvous_allgather(config, payload); });
}

using testing::error_of;

// A connection to 127.0.0.1:port that says nothing yet (-1 if it could not connect within 5 s, retrying while rank
// 0 starts).
int connect_silently(int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int attempt = 0; attempt < 100; ++attempt) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    const timeval bound{2, 0};  // a full accept queue must not hold connect() for the kernel's retries
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &bound, sizeof bound);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) return fd;
    ::close(fd);
    std::this_thread::sleep_for(50ms);
  }
  return -1;
}

// A hello in the wire format of tcp_rendezvous.hpp, up to its payload's length (the payload itself not included).
std::vector<char> hello_header(uint32_t exchange, uint32_t rank, uint32_t world, const std::string& token,
                               uint32_t payload_length) {
  std::vector<char> hello{'D', 'D', 'P', 'X', 'R', 'D', 'V', '2'};
  for (uint32_t value : {exchange, rank, world, static_cast<uint32_t>(token.size())}) {
    const char* bytes = reinterpret_cast<const char*>(&value);
    hello.insert(hello.end(), bytes, bytes + sizeof value);
  }
  hello.insert(hello.end(), token.begin(), token.end());
  const char* length = reinterpret_cast<const char*>(&payload_length);
  hello.insert(hello.end(), length, length + sizeof payload_length);
  return hello;
}

// A hand-made peer: connects, sends `hello` whole, and returns the connected socket (-1 if it never connected).
int connect_and_send(int port, const std::vector<char>& hello) {
  const int fd = connect_silently(port);
  if (fd >= 0)
    EXPECT_EQ(::send(fd, hello.data(), hello.size(), MSG_NOSIGNAL), static_cast<ssize_t>(hello.size()));
  return fd;
}

// A hand-made peer sending a hello with an empty payload.
int send_raw_hello(int port, uint32_t exchange, uint32_t rank, uint32_t world, const std::string& token) {
  return connect_and_send(port, hello_header(exchange, rank, world, token, 0));
}

// Reads rank 0's status byte (waiting up to 5 s); -1 when the connection closed or nothing came.
int read_status(int fd) {
  pollfd waiter{fd, POLLIN, 0};
  uint8_t status = 0;
  if (::poll(&waiter, 1, 5000) != 1 || ::recv(fd, &status, 1, 0) != 1) return -1;
  return status;
}

TEST(TcpRendezvous, EveryRankGetsRankZerosPayload) {
  const int port = find_free_port();
  const std::vector<uint8_t> payload{1, 2, 3, 250};
  std::vector<std::future<std::vector<uint8_t>>> peers;
  for (int rank = 1; rank < 4; ++rank)  // peers start before rank 0 listens: they must retry
    peers.push_back(broadcast_in_thread(config_for(port, rank, 4), {}));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(rendezvous_broadcast(config_for(port, 0, 4), payload), payload);
  for (auto& peer : peers) EXPECT_EQ(peer.get(), payload);
}

TEST(TcpRendezvous, PeerOfAnotherJobIsRejectedAndTheJobCompletes) {
  const int port = find_free_port();
  auto root = broadcast_in_thread(config_for(port, 0, 2), {42});
  std::string stranger = error_of([&] { rendezvous_broadcast(config_for(port, 1, 2, "job-b"), {}); });
  EXPECT_NE(stranger.find("rank 1: rank 0 at MASTER_ADDR:MASTER_PORT = 127.0.0.1:" + std::to_string(port) +
                          " rejected this process: its job token differs"),
            std::string::npos)
      << stranger;
  EXPECT_EQ(rendezvous_broadcast(config_for(port, 1, 2), {}), std::vector<uint8_t>{42});
  EXPECT_EQ(root.get(), std::vector<uint8_t>{42});
}

TEST(TcpRendezvous, WorldSizeMismatchIsRejected) {
  const int port = find_free_port();
  auto root = broadcast_in_thread(config_for(port, 0, 2), {7});
  std::string error = error_of([&] { rendezvous_broadcast(config_for(port, 1, 3), {}); });
  EXPECT_NE(error.find("expects world size 3 but rank 0 has 2"), std::string::npos) << error;
  rendezvous_broadcast(config_for(port, 1, 2), {});
  root.get();
}

TEST(TcpRendezvous, PeerTimesOutNamingTheAddressAndRank) {
  const RendezvousConfig config = config_for(find_free_port(), 2, 3, 300ms);
  std::string error = error_of([&] { rendezvous_broadcast(config, {}); });
  EXPECT_NE(error.find("rank 2: could not reach rank 0 at MASTER_ADDR:MASTER_PORT = 127.0.0.1:" +
                       std::to_string(config.master_port)),
            std::string::npos)
      << error;
}

TEST(TcpRendezvous, RankZeroTimesOutListingMissingRanks) {
  const RendezvousConfig config = config_for(find_free_port(), 0, 3, 300ms);
  std::string error = error_of([&] { rendezvous_broadcast(config, {1}); });
  EXPECT_NE(error.find("rank 0: timed out after 0 s waiting at MASTER_ADDR:MASTER_PORT = 127.0.0.1:"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("for rank(s) 1, 2 to connect"), std::string::npos) << error;
}

// Issue 13 point 7: a rank of 2^31 or more once passed the range check (it became negative as an int), was counted
// as served, and the real rank never got the payload. It is rejected now and the real rank completes the job.
TEST(TcpRendezvous, RankOfTwoToTheThirtyFirstIsRejected) {
  const int port = find_free_port();
  auto root = broadcast_in_thread(config_for(port, 0, 2), {9});
  const int fd = send_raw_hello(port, 1, 0x80000001u, 2, "job-a");
  ASSERT_GE(fd, 0);
  EXPECT_EQ(read_status(fd), 1);  // rejected
  ::close(fd);
  EXPECT_EQ(rendezvous_broadcast(config_for(port, 1, 2), {}), std::vector<uint8_t>{9});
  EXPECT_EQ(root.get(), std::vector<uint8_t>{9});
}

// Issue 13 point 7: a peer that sends a valid hello and vanishes without reading the answer took its rank's place
// (rank 0 returned, the real rank 1 could never join). A rank counts only once it acknowledged receipt.
TEST(TcpRendezvous, APeerThatVanishesAfterItsHelloTakesNoRanksPlace) {
  const int port = find_free_port();
  auto root = broadcast_in_thread(config_for(port, 0, 2), {5, 6});
  const int fd = send_raw_hello(port, 1, 1, 2, "job-a");
  ASSERT_GE(fd, 0);
  ::close(fd);  // gone before the answer is read, so without acknowledging it
  EXPECT_EQ(rendezvous_broadcast(config_for(port, 1, 2), {}), (std::vector<uint8_t>{5, 6}));
  EXPECT_EQ(root.get(), (std::vector<uint8_t>{5, 6}));
}

// The same in an all-gather: a peer that disconnects while the others are still arriving frees its rank again.
TEST(TcpRendezvous, AllGatherLetsTheRealRankInAfterAPeerVanished) {
  const int port = find_free_port();
  auto root = allgather_in_thread(config_for(port, 0, 3), {0});
  const int fd = send_raw_hello(port, 2, 1, 3, "job-a");
  ASSERT_GE(fd, 0);
  std::this_thread::sleep_for(100ms);  // rank 0 holds it as rank 1 ...
  ::close(fd);                         // ... until it leaves
  auto two = allgather_in_thread(config_for(port, 2, 3), {2, 2});
  const std::vector<std::vector<uint8_t>> expected{{0}, {1}, {2, 2}};
  EXPECT_EQ(rendezvous_allgather(config_for(port, 1, 3), {1}), expected);
  EXPECT_EQ(two.get(), expected);
  EXPECT_EQ(root.get(), expected);
}

TEST(TcpRendezvous, AllGatherGivesEveryRankEveryPayloadInRankOrder) {
  const int port = find_free_port();
  const int world = 4;
  std::vector<std::future<std::vector<std::vector<uint8_t>>>> ranks;
  for (int rank = world - 1; rank >= 0; --rank) {  // rank 0 last: the others retry until it listens
    std::vector<uint8_t> mine(static_cast<size_t>(rank) * 3, static_cast<uint8_t>(rank));  // rank 0's is empty
    ranks.push_back(allgather_in_thread(config_for(port, rank, world), mine));
  }
  std::vector<std::vector<uint8_t>> expected;
  for (int rank = 0; rank < world; ++rank)
    expected.emplace_back(static_cast<size_t>(rank) * 3, static_cast<uint8_t>(rank));
  for (auto& rank : ranks) EXPECT_EQ(rank.get(), expected);
  EXPECT_EQ(rendezvous_allgather(config_for(port, 0, 1), {7}), std::vector<std::vector<uint8_t>>{{7}});
}

// The two-step all-gather: rank 0 holds MASTER_PORT from construction (a second listener cannot take it), the
// others see it listening before they bind anything, and their probe connections do not disturb the exchange.
TEST(TcpRendezvous, HostHoldsThePortFromConstructionAndProbesDoNotDisturbIt) {
  const int port = find_free_port();
  RendezvousHost host(config_for(port, 0, 3));
  EXPECT_NE(error_of([&] { RendezvousHost second(config_for(port, 0, 3)); }).find("Address already in use"),
            std::string::npos);
  wait_for_rendezvous(config_for(port, 1, 3));
  wait_for_rendezvous(config_for(port, 2, 3));
  auto one = allgather_in_thread(config_for(port, 1, 3), {1});
  auto two = allgather_in_thread(config_for(port, 2, 3), {2});
  const std::vector<std::vector<uint8_t>> expected{{0}, {1}, {2}};
  EXPECT_EQ(host.allgather({0}), expected);
  EXPECT_EQ(one.get(), expected);
  EXPECT_EQ(two.get(), expected);
  EXPECT_THROW(host.allgather({0}), Error);  // one exchange per host
  const RendezvousConfig nobody = config_for(find_free_port(), 1, 2, 200ms);
  EXPECT_NE(error_of([&] { wait_for_rendezvous(nobody); }).find("rank 1: could not reach rank 0"), std::string::npos);
}

TEST(TcpRendezvous, ABroadcastPeerIsRejectedByAnAllGather) {
  const int port = find_free_port();
  auto root = allgather_in_thread(config_for(port, 0, 2), {1});
  std::string error = error_of([&] { rendezvous_broadcast(config_for(port, 1, 2), {}); });
  EXPECT_NE(error.find("it asks for a broadcast but rank 0 runs a all-gather"), std::string::npos) << error;
  EXPECT_EQ(rendezvous_allgather(config_for(port, 1, 2), {2}), (std::vector<std::vector<uint8_t>>{{1}, {2}}));
  root.get();
}

// Issue 13 point 7: without a token, a rendezvous reachable from other machines could be joined by anyone; it runs
// without one only on loopback, or when explicitly allowed. (0.0.0.0 resolves and is not loopback; the check comes
// before anything listens or connects.)
TEST(TcpRendezvous, NoTokenOffLoopbackIsRefusedUnlessAllowed) {
  ::unsetenv("DDPX_ALLOW_NO_TOKEN");
  for (int rank : {0, 1}) {
    RendezvousConfig config = config_for(find_free_port(), rank, 2, "");
    config.master_addr = "0.0.0.0";
    std::string error = error_of([&] { rendezvous_broadcast(config, {1}); });
    EXPECT_NE(error.find("rank " + std::to_string(rank) + ": the rendezvous at MASTER_ADDR:MASTER_PORT = 0.0.0.0:"),
              std::string::npos) << error;
    EXPECT_NE(error.find("set DDPX_JOB_TOKEN"), std::string::npos) << error;
    EXPECT_NE(error_of([&] { rendezvous_allgather(config, {1}); }).find("DDPX_ALLOW_NO_TOKEN=1"), std::string::npos);
  }
  // Loopback without a token, and an explicit allowance, both run.
  const int port = find_free_port();
  auto root = broadcast_in_thread(config_for(port, 0, 2, ""), {3});
  EXPECT_EQ(rendezvous_broadcast(config_for(port, 1, 2, ""), {}), std::vector<uint8_t>{3});
  root.get();
  RendezvousConfig allowed = config_for(find_free_port(), 1, 2, "", 200ms);
  allowed.master_addr = "0.0.0.0";
  allowed.allow_without_token = true;
  EXPECT_NE(error_of([&] { rendezvous_broadcast(allowed, {}); }).find("could not reach rank 0"), std::string::npos);
}

// Issue 37 item 2: rank 0 read one connection at a time, giving each 5 s, so three silent connections held the
// job 15 s (here: past rank 0's 3 s timeout). Connections are served at once now, each with its own deadline.
TEST(TcpRendezvous, SilentConnectionsDoNotHoldTheJob) {
  const int port = find_free_port();
  const RendezvousConfig root_config = config_for(port, 0, 2, 3s);
  auto root = broadcast_in_thread(root_config, {4});
  std::vector<int> silent;
  for (int i = 0; i < 3; ++i) silent.push_back(connect_silently(port));
  for (int fd : silent) ASSERT_GE(fd, 0);
  std::this_thread::sleep_for(100ms);  // rank 0 has accepted them before the real rank arrives
  const RendezvousConfig one = config_for(port, 1, 2, 3s);
  EXPECT_EQ(rendezvous_broadcast(one, {}), std::vector<uint8_t>{4});
  EXPECT_EQ(root.get(), std::vector<uint8_t>{4});
  for (int fd : silent) ::close(fd);
}

// Issue 37 item 2: 130 idle connections made rank 0 fail. More idle connections than rank 0 keeps (256) delay
// neither an all-gather nor its end.
TEST(TcpRendezvous, HundredsOfIdleConnectionsDoNotFailTheAllGather) {
  const int port = find_free_port();
  const RendezvousConfig root_config = config_for(port, 0, 3, 4s);
  auto root = allgather_in_thread(root_config, {0});
  std::vector<int> idle;
  for (int i = 0; i < 300; ++i) {
    const int fd = connect_silently(port);
    ASSERT_GE(fd, 0);
    idle.push_back(fd);
  }
  const RendezvousConfig two = config_for(port, 2, 3, 4s);
  auto second = allgather_in_thread(two, {2});
  const RendezvousConfig one = config_for(port, 1, 3, 4s);
  const std::vector<std::vector<uint8_t>> expected{{0}, {1}, {2}};
  EXPECT_EQ(rendezvous_allgather(one, {1}), expected);
  EXPECT_EQ(second.get(), expected);
  EXPECT_EQ(root.get(), expected);
  for (int fd : idle) ::close(fd);
}

// Issue 37 item 2: a hello under a wrong token announcing a 1 MiB payload made rank 0 wait for the payload. The
// token is checked on the header alone now: the peer is told at once, without sending a byte of its payload, and
// a broadcast hello with any payload is refused the same way. The job completes.
TEST(TcpRendezvous, APeerWithoutTheTokenIsRefusedBeforeItsPayloadIsRead) {
  const int port = find_free_port();
  auto root = broadcast_in_thread(config_for(port, 0, 2), {8});
  for (const std::string token : {"job-b", "job-a"}) {
    const int fd = connect_and_send(port, hello_header(1, 1, 2, token, 1 << 20));
    ASSERT_GE(fd, 0);
    EXPECT_EQ(read_status(fd), 1) << token;  // refused, with nothing of the payload sent
    ::close(fd);
  }
  EXPECT_EQ(rendezvous_broadcast(config_for(port, 1, 2), {}), std::vector<uint8_t>{8});
  EXPECT_EQ(root.get(), std::vector<uint8_t>{8});
}

}  // namespace
}  // namespace ddpx
