// Issue 37 item 1: the multi-node control channel against a scripted client on loopback. Before, `JOIN <job> 2 1 1`
// from anyone received `START <job token>`, a joined impostor's `FAIL` stopped node 0's workers while node 0 exited
// 0, and a node rank of -1 or 2^31-1 read outside node 0's table (SIGSEGV). Now node 0 challenges every connection
// and admits only a JOIN that proves the shared secret (node_messages.hpp); everything else is that connection's
// end, and the job runs as if it had not been there. A node that proved the secret and then misbehaves fails the
// job, named. Node 0 runs as launch_driver (the code behind `ddpx train --nnodes`); every wait is bounded.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "dist/free_ports.hpp"
#include "launch/node_messages.hpp"

namespace ddpx {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr const char* kSecret = "node-channel-attack-test-secret";

// Node launchers of a 2-node job (2 ranks per node) on 127.0.0.1, started in the background with their output in
// <dir>/n<rank>.log and exit status in n<rank>.rc.
struct Job {
  fs::path dir = fs::temp_directory_path() / ("ddpx_node_attacks_" + std::to_string(::getpid()));
  int port = find_free_ports("127.0.0.1", 2);
  Job() {
    fs::remove_all(dir);
    fs::create_directories(dir);
    ::setenv("DDPX_JOB_TOKEN", kSecret, 1);
  }
  ~Job() {
    ::unsetenv("DDPX_JOB_TOKEN");
    fs::remove_all(dir);
  }
  void start(int node_rank, const std::string& mode, const std::string& env = "") const {
    const std::string name = (dir / ("n" + std::to_string(node_rank))).string();
    const std::string command = "(" + env + " timeout 60 " + DDPX_LAUNCH_DRIVER + " nodes 2 " +
                                std::to_string(node_rank) + " 127.0.0.1 " + std::to_string(port) + " 2 10 10 " + mode +
                                " > " + name + ".log 2>&1; echo $? > " + name + ".rc) &";
    ASSERT_EQ(std::system(command.c_str()), 0);
  }
  // The node's exit status once it ended (waiting up to 60 s), -1 if it did not.
  int status(int node_rank) const {
    const fs::path rc = dir / ("n" + std::to_string(node_rank) + ".rc");
    for (int i = 0; i < 600; ++i) {
      std::ifstream in(rc);
      int value = -1;
      if (in >> value) return value;
      std::this_thread::sleep_for(100ms);
    }
    return -1;
  }
  std::string log(int node_rank) const {
    std::ifstream in(dir / ("n" + std::to_string(node_rank) + ".log"));
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
};

// A connection to node 0's control port (retrying up to 10 s while it starts); -1 if none.
int connect_to(int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) return fd;
    ::close(fd);
    std::this_thread::sleep_for(50ms);
  }
  return -1;
}

void send_text(int fd, const std::string& text) {
  ASSERT_EQ(::send(fd, text.data(), text.size(), MSG_NOSIGNAL), static_cast<ssize_t>(text.size()));
}

// What arrives until the peer closes, a line ending in `until` arrives, or `ms` pass.
std::string receive(int fd, int ms, const std::string& until = "") {
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd waiter{fd, POLLIN, 0};
    if (::poll(&waiter, 1, 50) <= 0) continue;
    char buffer[4096];
    const ssize_t got = ::recv(fd, buffer, sizeof buffer, 0);
    if (got <= 0) break;
    text.append(buffer, static_cast<size_t>(got));
    if (!until.empty() && text.find(until) != std::string::npos && text.back() == '\n') break;
  }
  return text;
}

// The challenge node 0 sends first on every connection.
std::string challenge_of(int fd) {
  const std::string line = receive(fd, 5000, "\n");
  const auto challenge = node_job::parse_challenge(line.substr(0, line.find('\n')));
  EXPECT_TRUE(challenge.has_value()) << line;
  return challenge.value_or("");
}

TEST(NodeChannelAttacks, StrangersGetNoTokenAndTheJobRunsAsIfTheyWereAbsent) {
  Job job;
  job.start(0, "ok");
  std::vector<std::string> attacks = {
      "JOIN job 2 1 1\n",  // the protocol before the handshake: it was answered with START <token>
      "FAIL 0 0 impostor says stop\n",
      "PING\n",
  };
  const std::string nonce = node_job::random_nonce();
  for (int rank : {1, -1, 5, INT_MAX, INT_MIN})  // proofs made with another secret
    attacks.push_back(node_job::join_line("not-the-secret", std::string(32, '0'), 2, rank, 2, nonce) + "\n");
  for (const std::string& attack : attacks) {
    SCOPED_TRACE(attack);
    const int fd = connect_to(job.port);
    ASSERT_GE(fd, 0);
    const std::string challenge = challenge_of(fd);
    std::string line = attack;
    if (attack.starts_with("JOIN ddpx-launch-2")) {  // a well-formed JOIN for this very challenge, wrong proof
      const auto join = node_job::parse_join(attack.substr(0, attack.size() - 1));
      ASSERT_TRUE(join.has_value());
      line = node_job::join_line("not-the-secret", challenge, 2, join->node_rank, 2, nonce) + "\n";
    }
    send_text(fd, line);
    const std::string answer = receive(fd, 5000);
    EXPECT_NE(answer.find("REFUSE"), std::string::npos) << answer;
    EXPECT_EQ(answer.find("START"), std::string::npos) << answer;
    ::close(fd);
  }
  const int oversized = connect_to(job.port);  // a line longer than any message: dropped
  ASSERT_GE(oversized, 0);
  challenge_of(oversized);
  send_text(oversized, std::string(100000, 'x'));
  EXPECT_EQ(receive(oversized, 5000).find("START"), std::string::npos);
  ::close(oversized);
  std::vector<int> silent;  // held open while the real node joins
  for (int i = 0; i < 5; ++i) silent.push_back(connect_to(job.port));

  job.start(1, "ok");
  EXPECT_EQ(job.status(1), 0) << job.log(1);
  EXPECT_EQ(job.status(0), 0) << job.log(0);
  const std::string log0 = job.log(0);
  for (int rank = 0; rank < 4; ++rank)
    EXPECT_NE((log0 + job.log(1)).find("rank " + std::to_string(rank) + " of 4"), std::string::npos);
  EXPECT_NE(log0.find("node 0 dropped a connection from 127.0.0.1: its first line is not a ddpx-launch-2 JOIN"),
            std::string::npos) << log0;
  EXPECT_NE(log0.find("its JOIN does not prove the job's secret"), std::string::npos) << log0;
  EXPECT_EQ(log0.find("ddpx launch: impostor"), std::string::npos) << log0;  // never a verdict
  for (int fd : silent) ::close(fd);
}

// A node that proved the secret but claims a node rank outside the job (-1, 5, 2^31-1, -2^31 once read outside
// node 0's table): the job fails naming that node and its rank, by a clear error, not a signal.
TEST(NodeChannelAttacks, AnAuthenticatedNodeWithARankOutOfRangeFailsTheJobByName) {
  for (int rank : {-1, 5, INT_MAX, INT_MIN}) {
    SCOPED_TRACE(rank);
    Job job;
    job.start(0, "ok");
    const int fd = connect_to(job.port);
    ASSERT_GE(fd, 0);
    const std::string challenge = challenge_of(fd);
    send_text(fd, node_job::join_line(kSecret, challenge, 2, rank, 2, node_job::random_nonce()) + "\n");
    const std::string answer = receive(fd, 5000);
    EXPECT_NE(answer.find("REFUSE the launcher at 127.0.0.1 has --node-rank " + std::to_string(rank) +
                          ", outside 1..1"), std::string::npos) << answer;
    ::close(fd);
    EXPECT_EQ(job.status(0), 2) << job.log(0);
    EXPECT_NE(job.log(0).find("--node-rank " + std::to_string(rank) + ", outside 1..1"), std::string::npos);
  }
}

// A node that joined with the secret and then sends a FAIL with exit status 0 (or any malformed line) is that
// node failing: node 0 stops the job naming it and exits non-zero; it never exits 0 printing the sender's text as
// the verdict.
TEST(NodeChannelAttacks, AMalformedReportFromAJoinedNodeFailsTheJobNamingTheNode) {
  Job job;
  job.start(0, "sleep");
  const int fd = connect_to(job.port);
  ASSERT_GE(fd, 0);
  const std::string nonce = node_job::random_nonce();
  send_text(fd, node_job::join_line(kSecret, challenge_of(fd), 2, 1, 2, nonce) + "\n");
  const std::string started = receive(fd, 5000, "\n");
  const auto start = node_job::parse_start(started.substr(0, started.find('\n')));
  ASSERT_TRUE(start.has_value()) << started;
  EXPECT_TRUE(node_job::start_proof_holds(kSecret, nonce, *start));
  EXPECT_FALSE(node_job::start_proof_holds("not-the-secret", nonce, *start));
  send_text(fd, "FAIL 2 0 impostor says all is well\n");
  EXPECT_NE(receive(fd, 10000, "ABORT").find("ABORT 1 node 1's launcher (127.0.0.1) sent a malformed message"),
            std::string::npos);
  ::close(fd);
  EXPECT_EQ(job.status(0), 1) << job.log(0);
  EXPECT_NE(job.log(0).find("ddpx launch: node 1's launcher (127.0.0.1) sent a malformed message 'FAIL 2 0 impostor"),
            std::string::npos) << job.log(0);
}

// The parsers take exactly the fields they name.
TEST(NodeMessages, EveryFieldIsChecked) {
  using namespace node_job;
  const std::string nonce(32, 'a'), proof(64, 'b');
  EXPECT_TRUE(parse_join("JOIN ddpx-launch-2 2 1 2 " + nonce + " " + proof).has_value());
  EXPECT_FALSE(parse_join("JOIN ddpx-launch-2 2 1 2 " + nonce + " " + proof + " extra").has_value());
  EXPECT_FALSE(parse_join("JOIN ddpx-launch-2 0x2 1 2 " + nonce + " " + proof).has_value());
  EXPECT_FALSE(parse_join("JOIN ddpx-launch-2 2 1 0 " + nonce + " " + proof).has_value());
  EXPECT_FALSE(parse_join("JOIN ddpx-launch-2 2 99999999999 2 " + nonce + " " + proof).has_value());
  EXPECT_FALSE(parse_join("JOIN ddpx-launch-2 2 1 2 " + nonce.substr(1) + "A " + proof).has_value());
  EXPECT_FALSE(parse_join("JOIN ddpx-launch-1 2 1 2").has_value());
  EXPECT_EQ(parse_fail("FAIL 1 137 rank 3 was killed")->message, "rank 3 was killed");
  EXPECT_FALSE(parse_fail("FAIL 1 0 zero is success").has_value());
  EXPECT_FALSE(parse_fail("FAIL 3 1 no such priority").has_value());
  EXPECT_FALSE(parse_fail("FAIL 1 256 out of range").has_value());
  EXPECT_EQ(parse_abort("ABORT 130 interrupted")->exit_code, 130);
  EXPECT_FALSE(parse_abort("ABORT -1 negative").has_value());
  EXPECT_FALSE(parse_start("START " + nonce).has_value());
  EXPECT_FALSE(parse_challenge("CHALLENGE " + nonce + " more").has_value());
  EXPECT_EQ(workers_token("s", nonce).size(), 32u);
  EXPECT_NE(workers_token("s", nonce), workers_token("t", nonce));
}

}  // namespace
}  // namespace ddpx
