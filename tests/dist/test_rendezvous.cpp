// TCP rendezvous on loopback, ranks as threads of this process: delivery, rejection of another job's peer,
// world-size mismatch, and the timeout messages that name MASTER_ADDR:MASTER_PORT and the rank.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "core/error.hpp"
#include "error_expect.hpp"
#include "dist/launcher.hpp"
#include "dist/tcp_rendezvous.hpp"

namespace ddpx {
namespace {

using namespace std::chrono_literals;

RendezvousConfig config_for(int port, int rank, int world, std::string token = "job-a") {
  return RendezvousConfig{"127.0.0.1", port, rank, world, std::move(token), 5s};
}

using testing::error_of;

TEST(TcpRendezvous, EveryRankGetsRankZerosPayload) {
  const int port = find_free_port();
  const std::vector<uint8_t> payload{1, 2, 3, 250};
  std::vector<std::future<std::vector<uint8_t>>> peers;
  for (int rank = 1; rank < 4; ++rank)  // peers start before rank 0 listens: they must retry
    peers.push_back(std::async(std::launch::async,
                               [=] { return rendezvous_broadcast(config_for(port, rank, 4), {}); }));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(rendezvous_broadcast(config_for(port, 0, 4), payload), payload);
  for (auto& peer : peers) EXPECT_EQ(peer.get(), payload);
}

TEST(TcpRendezvous, PeerOfAnotherJobIsRejectedAndTheJobCompletes) {
  const int port = find_free_port();
  auto root = std::async(std::launch::async, [=] { return rendezvous_broadcast(config_for(port, 0, 2), {42}); });
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
  auto root = std::async(std::launch::async, [=] { return rendezvous_broadcast(config_for(port, 0, 2), {7}); });
  std::string error = error_of([&] { rendezvous_broadcast(config_for(port, 1, 3), {}); });
  EXPECT_NE(error.find("expects world size 3 but rank 0 has 2"), std::string::npos) << error;
  rendezvous_broadcast(config_for(port, 1, 2), {});
  root.get();
}

TEST(TcpRendezvous, PeerTimesOutNamingTheAddressAndRank) {
  RendezvousConfig config = config_for(find_free_port(), 2, 3);
  config.timeout = 300ms;
  std::string error = error_of([&] { rendezvous_broadcast(config, {}); });
  EXPECT_NE(error.find("rank 2: could not reach rank 0 at MASTER_ADDR:MASTER_PORT = 127.0.0.1:" +
                       std::to_string(config.master_port)),
            std::string::npos)
      << error;
}

TEST(TcpRendezvous, RankZeroTimesOutListingMissingRanks) {
  RendezvousConfig config = config_for(find_free_port(), 0, 3);
  config.timeout = 300ms;
  std::string error = error_of([&] { rendezvous_broadcast(config, {1}); });
  EXPECT_NE(error.find("rank 0: timed out after 0 s waiting at MASTER_ADDR:MASTER_PORT = 127.0.0.1:"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("for rank(s) 1, 2 to connect"), std::string::npos) << error;
}

}  // namespace
}  // namespace ddpx
