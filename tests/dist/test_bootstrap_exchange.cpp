// Bootstrap exchange: which route each launcher's environment takes, the store keys and job token under torchrun,
// and the store client's refusals of servers that are not torchrun's store (each within its deadline, naming
// MASTER_ADDR:MASTER_PORT and the rank). The store protocol itself is tested against real torchrun agents
// (tests/dist/torchrun_test.sh).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <thread>

#include "dist/bootstrap.hpp"
#include "dist/bootstrap_exchange.hpp"
#include "dist/free_ports.hpp"
#include "dist/torch_store_client.hpp"
#include "error_expect.hpp"
#include "fake_env.hpp"

namespace ddpx {
namespace {

using testing::expect_error;

using testing::fake_env;

std::map<std::string, std::string> torchrun_worker(const std::string& use_agent_store) {
  return {{"RANK", "1"},
          {"WORLD_SIZE", "2"},
          {"LOCAL_RANK", "1"},
          {"MASTER_ADDR", "127.0.0.1"},
          {"MASTER_PORT", "29500"},
          {"TORCHELASTIC_RUN_ID", "job-7"},
          {"TORCHELASTIC_RESTART_COUNT", "2"},
          {"TORCHELASTIC_USE_AGENT_STORE", use_agent_store}};
}

ExchangeRoute route_of(const std::map<std::string, std::string>& vars) {
  EnvLookup env = fake_env(vars);
  return exchange_route(detect_world(env), env);
}

TEST(BootstrapExchange, RouteFollowsTheLauncher) {
  EXPECT_EQ(route_of({}), ExchangeRoute::single_process);
  // torchrun with its agent's store on MASTER_PORT (static rendezvous; PyTorch 2.x also with c10d)
  EXPECT_EQ(route_of(torchrun_worker("True")), ExchangeRoute::torchrun_store);
  // torchrun 1.13 with c10d or --standalone: MASTER_PORT is a free port on rank 0's node
  EXPECT_EQ(route_of(torchrun_worker("False")), ExchangeRoute::ddpx_rendezvous);
  // ddpx's own launcher sets RANK/WORLD_SIZE/MASTER_* too, and no TORCHELASTIC_*
  EXPECT_EQ(route_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "1234"}}),
            ExchangeRoute::ddpx_rendezvous);
  // ... and its workers keep their own route when the launcher itself ran under torchrun
  auto nested = torchrun_worker("True");
  nested[kWorkerMarker] = "1";
  EXPECT_EQ(route_of(nested), ExchangeRoute::ddpx_rendezvous);
  EXPECT_FALSE(started_by_torchrun(fake_env(nested)));
  EXPECT_TRUE(started_by_torchrun(fake_env(torchrun_worker("True"))));
}

TEST(BootstrapExchange, StoreKeysAreUniquePerRunAttemptTagAndSequence) {
  EnvLookup env = fake_env(torchrun_worker("True"));
  EXPECT_EQ(torchrun_store_key_prefix(env, "NCCL unique id", 0), "/ddpx/job-7/attempt-2/NCCL unique id/0");
  EXPECT_EQ(torchrun_store_key_prefix(env, "NCCL unique id", 1), "/ddpx/job-7/attempt-2/NCCL unique id/1");
  EXPECT_EQ(torchrun_store_key_prefix(fake_env({}), "x", 0), "/ddpx/none/attempt-0/x/0");
}

TEST(BootstrapExchange, JobTokenUnderTorchrunComesFromItsRunId) {
  EXPECT_EQ(detect_world(fake_env(torchrun_worker("False"))).job_token, "torchrun-job-7-attempt2");
  auto default_id = torchrun_worker("False");
  default_id["TORCHELASTIC_RUN_ID"] = "none";  // torchrun's default --rdzv-id: not a secret, not used
  EXPECT_EQ(detect_world(fake_env(default_id)).job_token.find("none"), std::string::npos);
  auto explicit_token = torchrun_worker("False");
  explicit_token["DDPX_JOB_TOKEN"] = "secret";
  EXPECT_EQ(detect_world(fake_env(explicit_token)).job_token, "secret");
}

// The all-gather over ddpx's own rendezvous is rendezvous_allgather (tested with real ranks in
// test_rendezvous.cpp); here: its route needs MASTER_ADDR/MASTER_PORT, and one process gathers itself.
TEST(BootstrapExchange, AllGatherNeedsAMasterAddressOrIsItsOwnResult) {
  EnvLookup env = fake_env({{"RANK", "0"}, {"WORLD_SIZE", "2"}});
  expect_error([&] { allgather_bytes(detect_world(env), "test bytes", {1, 2}, std::chrono::seconds(1), env); },
               {"rank 0", "MASTER_ADDR and MASTER_PORT", "test bytes"});
  EnvLookup alone = fake_env({});
  auto all = allgather_bytes(detect_world(alone), "test bytes", {1, 2}, std::chrono::seconds(1), alone);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0], (std::vector<uint8_t>{1, 2}));
}

TEST(BootstrapExchange, RankZeroOfSeveralNodesRefusesALoopbackMasterAddr) {
  // torchrun 1.13's c10d rendezvous on a host whose name maps to 127.0.1.1: the other node could never connect.
  auto vars = torchrun_worker("False");
  vars["RANK"] = "0";
  vars["LOCAL_RANK"] = "0";
  vars["WORLD_SIZE"] = "4";
  vars["LOCAL_WORLD_SIZE"] = "2";
  vars["MASTER_ADDR"] = "127.0.1.1";
  EnvLookup env = fake_env(vars);
  expect_error([&] { broadcast_from_rank0(detect_world(env), "test bytes", {7}, std::chrono::seconds(1), env); },
               {"rank 0", "MASTER_ADDR '127.0.1.1' is 127.0.1.1", "loopback", "2 of the 4 ranks"});
}

// A loopback listener that treats each connection as `behaviour` says, on its own thread, until stopped.
class WrongServer {
 public:
  enum Behaviour { close_at_once, stay_silent };
  explicit WrongServer(Behaviour behaviour) : behaviour_(behaviour) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    EXPECT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&address), length), 0);
    EXPECT_EQ(::listen(listener_, 16), 0);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~WrongServer() {
    stop_ = true;
    thread_.join();
    for (int fd : open_) ::close(fd);
    ::close(listener_);
  }
  int port() const { return port_; }

 private:
  void serve() {
    while (!stop_) {
      pollfd waiter{listener_, POLLIN, 0};
      if (::poll(&waiter, 1, 50) <= 0) continue;
      int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) continue;
      if (behaviour_ == close_at_once) ::close(fd);
      else open_.push_back(fd);
    }
  }
  Behaviour behaviour_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::vector<int> open_;
  std::thread thread_;
};

TEST(TorchStoreClient, RefusesAServerThatClosesEveryConnection) {
  WrongServer server(WrongServer::close_at_once);
  expect_error([&] {
    TorchStoreClient("127.0.0.1", server.port(), 3, TorchStoreClient::Clock::now() + std::chrono::seconds(5));
  }, {"rank 3", "MASTER_ADDR:MASTER_PORT = 127.0.0.1:" + std::to_string(server.port()), "PyTorch 1.13",
      "torchrun's store?"});
}

TEST(TorchStoreClient, RefusesASilentServerAtTheDeadline) {
  WrongServer server(WrongServer::stay_silent);
  expect_error([&] {
    TorchStoreClient("127.0.0.1", server.port(), 1, TorchStoreClient::Clock::now() + std::chrono::milliseconds(300));
  }, {"rank 1", "127.0.0.1:" + std::to_string(server.port()), "neither answered"});
}

TEST(TorchStoreClient, NothingListeningIsAnErrorAtTheDeadline) {
  const int port = find_free_port("127.0.0.1");
  expect_error([&] {
    TorchStoreClient("127.0.0.1", port, 2, TorchStoreClient::Clock::now() + std::chrono::milliseconds(300));
  }, {"rank 2", "could not connect to torchrun's store at MASTER_ADDR:MASTER_PORT = 127.0.0.1:" +
                    std::to_string(port)});
  expect_error([&] { TorchStoreClient("no-such-host.invalid", port, 2, TorchStoreClient::Clock::now()); },
               {"rank 2", "cannot resolve MASTER_ADDR 'no-such-host.invalid'"});
}

}  // namespace
}  // namespace ddpx
