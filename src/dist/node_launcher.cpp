// Multi-node launcher: one launcher per node; node 0's serves the control channel, the others join it, and all of
// them supervise their own workers (WorkerGroup) and agree on how the job ends. Protocol (one text line each):
//   node r -> 0  JOIN ddpx-launch-1 <nnodes> <node rank> <nproc per node>
//   0 -> node r  START <job token>          | REFUSE <message> (then both fail with it)
//   both ways    PING                        (every second; silence past the heartbeat timeout = launcher lost)
//   node r -> 0  FAIL <priority> <exit code> <message>   (first local worker failure, or an interrupt)
//   node r -> 0  DONE                        (all its workers exited 0)
//   0 -> node r  ABORT <exit code> <message> (the job's verdict) | END (every node is done)
// Node 0 picks the verdict: of the failures reported within kSettle of the first one, the one of lowest priority
// (0: a launcher interrupted; 1: a worker killed by a signal, or a launcher lost; 2: a worker that exited non-zero),
// earliest first. Ranks that lose a peer exit with an error a moment after the peer died; this keeps the blame on
// the rank that died first even when its survivors' reports arrive sooner.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>
#include <random>
#include <sstream>

#include "core/error.hpp"
#include "dist/child_environment.hpp"
#include "dist/launcher.hpp"
#include "dist/node_channel.hpp"
#include "dist/worker_group.hpp"

namespace ddpx {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kProtocol = "ddpx-launch-1";
constexpr auto kHeartbeatEvery = std::chrono::seconds(1);
constexpr auto kSettle = std::chrono::milliseconds(500);

struct Verdict {
  int priority = 2;
  int exit_code = 1;
  std::string message;
};

std::string job_token() {
  std::random_device device;
  std::string token;
  char digits[9];
  for (int i = 0; i < 4; ++i) {
    std::snprintf(digits, sizeof digits, "%08x", static_cast<unsigned>(device()));
    token += digits;
  }
  return token;
}

// "FAIL 1 137 rest of the line" -> {"FAIL", "1", "137", "rest of the line"} (at most `fields` + 1 parts).
std::vector<std::string> split(const std::string& line, size_t fields) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (parts.size() < fields && start <= line.size()) {
    size_t space = line.find(' ', start);
    if (space == std::string::npos) {
      parts.push_back(line.substr(start));
      return parts;
    }
    parts.push_back(line.substr(start, space - start));
    start = space + 1;
  }
  if (start <= line.size()) parts.push_back(line.substr(start));
  return parts;
}

std::optional<int> number(const std::string& text) {
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string local_address(int fd) {
  sockaddr_storage local{};
  socklen_t length = sizeof local;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) != 0) return "?";
  char text[64] = "?";
  ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&local)->sin_addr, text, sizeof text);
  return text;
}

Verdict worker_verdict(const WorkerGroup& group, int node_rank, const std::string& address) {
  const WorkerExit& failure = *group.first_failure();
  std::string last_line = group.last_stderr_line(failure.rank);
  if (last_line.empty()) last_line = "(nothing on its stderr)";
  const int code = exit_code_of(failure.status);
  return {WIFSIGNALED(failure.status) ? 1 : 2, code ? code : 1,
          "rank " + std::to_string(failure.rank) + " on node " + std::to_string(node_rank) + " (" + address + ") " +
              describe_status(failure.status) + " first: " + last_line};
}

Verdict interrupt_verdict(int node_rank, const std::string& address, int signal_number) {
  return {0, 130, "node " + std::to_string(node_rank) + "'s launcher (" + address + ") was interrupted by signal " +
                      std::to_string(signal_number) + " (" + strsignal(signal_number) + "); every node's workers "
                      "were stopped"};
}

// After the verdict: stop this node's workers and wait for them (bounded by the grace period, then SIGKILL).
int finish_with(WorkerGroup& group, const Verdict& verdict, int stderr_fd) {
  group.stop();
  std::vector<pollfd> none;
  while (!group.finished()) group.poll_once(none, 100);
  write_all(stderr_fd, "ddpx launch: " + verdict.message + "\n");
  return verdict.exit_code;
}

std::vector<WorkerGroup::Spawn> node_workers(int nproc, const NodeOptions& node, const std::string& master_ip,
                                             const std::string& token) {
  std::vector<WorkerGroup::Spawn> spawns;
  for (int local = 0; local < nproc; ++local) {
    const int rank = node.node_rank * nproc + local;
    spawns.push_back({rank, environment_with({"RANK=" + std::to_string(rank),
                                              "WORLD_SIZE=" + std::to_string(node.nnodes * nproc),
                                              "LOCAL_RANK=" + std::to_string(local),
                                              "LOCAL_WORLD_SIZE=" + std::to_string(nproc),
                                              "GROUP_RANK=" + std::to_string(node.node_rank),
                                              "MASTER_ADDR=" + master_ip,
                                              "MASTER_PORT=" + std::to_string(node.master_port + 1),
                                              "DDPX_JOB_TOKEN=" + token, std::string(kWorkerMarker) + "=1"})});
  }
  return spawns;
}

struct Peer {
  LineConnection connection;
  std::string address;
  bool joined = false;
  bool done = false;
};

class Node0 {
 public:
  Node0(int nproc, const NodeOptions& node, const std::string& master_ip, const LaunchOptions& options)
      : nproc_(nproc), node_(node), master_ip_(master_ip), options_(options), peers_(size_t(node.nnodes)) {}

  int run(const std::vector<std::string>& argv) {
    require_port_free(master_ip_, node_.master_port + 1, "the workers' rendezvous, --master-port + 1");
    listener_ = listen_on(master_ip_, node_.master_port);
    SignalRelay relay({SIGINT, SIGTERM, SIGCHLD});
    try {
      if (!join(relay)) return 130;
      const std::string token = job_token();
      for (size_t r = 1; r < peers_.size(); ++r) peers_[r].connection.send("START " + token);
      ::close(listener_);
      listener_ = -1;
      WorkerGroup group(options_.executable.empty() ? self_executable() : options_.executable, argv,
                        node_workers(nproc_, node_, master_ip_, token), options_.stdout_fd, options_.stderr_fd,
                        options_.grace_period);
      return supervise(group, relay);
    } catch (const Error& error) {
      abort_all(1, error.what());
      if (listener_ >= 0) ::close(listener_);
      throw;
    }
  }

 private:
  void abort_all(int code, const std::string& message) {
    for (size_t r = 1; r < peers_.size(); ++r) peers_[r].connection.send("ABORT " + std::to_string(code) + " " + message);
  }

  // A JOIN line from a connection at `address`; a mismatch is fatal for the whole job (thrown, so abort_all runs).
  void accept_join(LineConnection& connection, const std::string& address, const std::string& line) {
    const std::vector<std::string> parts = split(line, 4);
    if (parts.size() != 5 || parts[0] != "JOIN") return;  // not a launcher: dropped by the caller
    auto nnodes = number(parts[2]), rank = number(parts[3]), nproc = number(parts[4]);
    auto refuse = [&](const std::string& message) {
      connection.send("REFUSE " + message);
      fail("{}", message);
    };
    if (parts[1] != kProtocol)
      refuse(fmt::format("the launcher at {} speaks {} but node 0 ({}) speaks {}: run the same ddpx on every node",
                         address, parts[1], master_ip_, kProtocol));
    if (!nnodes || !rank || !nproc) refuse(fmt::format("the launcher at {} sent a malformed join: '{}'", address, line));
    if (*nnodes != node_.nnodes)
      refuse(fmt::format("--nnodes differs between nodes: node {} ({}) was started with --nnodes {}, node 0 ({}) "
                         "with --nnodes {}; give every node's launcher the same --nnodes",
                         *rank, address, *nnodes, master_ip_, node_.nnodes));
    if (*nproc != nproc_)
      refuse(fmt::format("--nproc-per-node differs between nodes: node {} ({}) was started with --nproc-per-node "
                         "{}, node 0 ({}) with {}; give every node the same --nproc-per-node",
                         *rank, address, *nproc, master_ip_, nproc_));
    if (*rank <= 0 || *rank >= node_.nnodes || peers_[size_t(*rank)].joined)
      refuse(fmt::format("--node-rank {} was given to two nodes ({} and {}): each node needs its own --node-rank "
                         "in 0..{}", *rank, *rank == 0 ? master_ip_ : peers_[size_t(*rank)].address, address,
                         node_.nnodes - 1));
    Peer& peer = peers_[size_t(*rank)];
    peer.connection = std::move(connection);
    peer.address = address;
    peer.joined = true;
  }

  // Waits for every other node's JOIN (bounded by --join-timeout). False when interrupted.
  bool join(SignalRelay& relay) {
    const auto deadline = Clock::now() + node_.join_timeout;
    std::vector<std::pair<LineConnection, std::string>> pending;  // accepted, JOIN not yet read
    auto joined = [&] {
      int count = 0;
      for (const Peer& peer : peers_) count += peer.joined;
      return count;
    };
    while (joined() < node_.nnodes - 1) {
      if (Clock::now() > deadline) {
        std::string missing;
        for (size_t r = 1; r < peers_.size(); ++r)
          if (!peers_[r].joined) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        fail("node(s) {} did not join node 0's launcher at {}:{} within --join-timeout {} s: start `ddpx ... "
             "--nnodes {} --node-rank R --master-addr {} --master-port {}` on each of them (and check that they "
             "can reach this address)", missing, master_ip_, node_.master_port,
             std::chrono::duration_cast<std::chrono::seconds>(node_.join_timeout).count(), node_.nnodes,
             node_.master_addr, node_.master_port);
      }
      std::vector<pollfd> waiters{{relay.read_fd(), POLLIN, 0}, {listener_, POLLIN, 0}};
      for (auto& [connection, address] : pending) waiters.push_back({connection.fd(), POLLIN, 0});
      ::poll(waiters.data(), waiters.size(), 100);
      for (int signal_number : relay.drain())
        if (signal_number != SIGCHLD) {
          const Verdict verdict = interrupt_verdict(0, master_ip_, signal_number);
          abort_all(verdict.exit_code, verdict.message);
          write_all(options_.stderr_fd, "ddpx launch: " + verdict.message + "\n");
          return false;
        }
      for (int fd; (fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC)) >= 0;) {
        LineConnection connection(fd);
        pending.emplace_back(std::move(connection), peer_address(fd));
      }
      for (auto it = pending.begin(); it != pending.end();) {
        std::vector<std::string> lines;
        const bool open = it->first.receive(lines);
        if (!lines.empty()) {
          accept_join(it->first, it->second, lines.front());
          it = pending.erase(it);  // joined (moved into its Peer) or not a launcher (dropped)
        } else {
          it = open ? it + 1 : pending.erase(it);
        }
      }
      for (size_t r = 1; r < peers_.size(); ++r) {
        std::vector<std::string> lines;
        if (peers_[r].joined && !peers_[r].connection.receive(lines))
          fail("node {}'s launcher ({}) left before the job started (killed or interrupted)", r, peers_[r].address);
      }
    }
    return true;
  }

  int supervise(WorkerGroup& group, SignalRelay& relay) {
    std::optional<Verdict> candidate;
    Clock::time_point candidate_at;
    auto offer = [&](Verdict verdict) {
      if (!candidate) candidate_at = Clock::now();
      if (!candidate || verdict.priority < candidate->priority) candidate = std::move(verdict);
    };
    auto next_ping = Clock::now();
    for (;;) {
      if (Clock::now() >= next_ping) {
        for (size_t r = 1; r < peers_.size(); ++r) peers_[r].connection.send("PING");
        next_ping = Clock::now() + kHeartbeatEvery;
      }
      std::vector<pollfd> waiters{{relay.read_fd(), POLLIN, 0}};
      for (size_t r = 1; r < peers_.size(); ++r)
        if (peers_[r].connection.open()) waiters.push_back({peers_[r].connection.fd(), POLLIN, 0});
      group.poll_once(waiters, 100);
      for (int signal_number : relay.drain())
        if (signal_number != SIGCHLD) {
          group.signal_all(signal_number);
          group.kill_after_grace();
          offer(interrupt_verdict(0, master_ip_, signal_number));
        }
      if (group.first_failure()) {
        group.stop();
        offer(worker_verdict(group, 0, master_ip_));
      }
      for (size_t r = 1; r < peers_.size(); ++r) {
        Peer& peer = peers_[r];
        if (!peer.connection.open()) continue;
        std::vector<std::string> lines;
        const bool open = peer.connection.receive(lines);
        for (const std::string& line : lines) {
          const std::vector<std::string> parts = split(line, 3);
          if (parts[0] == "DONE") peer.done = true;
          if (parts[0] == "FAIL" && parts.size() == 4 && number(parts[1]) && number(parts[2]))
            offer({*number(parts[1]), *number(parts[2]), parts[3]});
        }
        const bool silent = Clock::now() - peer.connection.last_heard() > node_.heartbeat_timeout;
        if ((!open || silent) && !peer.done)
          offer({1, 1, fmt::format("node {}'s launcher ({}) {}; every node's workers were stopped", r, peer.address,
                                   open ? fmt::format("sent nothing for {} s (its host or the network failed?)",
                                                      std::chrono::duration_cast<std::chrono::seconds>(
                                                          node_.heartbeat_timeout).count())
                                        : "lost its connection to node 0 (killed, or its host failed)")});
        if (!open || silent) peer.connection.close();
      }
      if (candidate && Clock::now() >= candidate_at + kSettle) {
        abort_all(candidate->exit_code, candidate->message);
        return finish_with(group, *candidate, options_.stderr_fd);
      }
      if (!candidate && group.finished() && group.all_succeeded()) {
        bool all_done = true;
        for (size_t r = 1; r < peers_.size(); ++r) all_done = all_done && peers_[r].done;
        if (all_done) {
          for (size_t r = 1; r < peers_.size(); ++r) peers_[r].connection.send("END");
          return 0;
        }
      }
    }
  }

  int nproc_;
  NodeOptions node_;
  std::string master_ip_;
  LaunchOptions options_;
  std::vector<Peer> peers_;  // by node rank; [0] unused
  int listener_ = -1;
};

int run_joining_node(int nproc, const NodeOptions& node, const std::string& master_ip,
                     const std::vector<std::string>& argv, const LaunchOptions& options) {
  const std::string endpoint = master_ip + ":" + std::to_string(node.master_port);
  const auto deadline = Clock::now() + node.join_timeout;
  const long long join_seconds = std::chrono::duration_cast<std::chrono::seconds>(node.join_timeout).count();
  std::string last_error;
  const int fd = connect_within(master_ip, node.master_port, deadline, last_error);
  DDPX_REQUIRE(fd >= 0, "node {}: cannot reach node 0's launcher at {} (--master-addr {} --master-port {}) within "
               "--join-timeout {} s ({}): start node 0's launcher, and check the address and port",
               node.node_rank, endpoint, node.master_addr, node.master_port, join_seconds, last_error);
  LineConnection connection(fd);
  const std::string address = local_address(fd);
  connection.send(fmt::format("JOIN {} {} {} {}", kProtocol, node.nnodes, node.node_rank, nproc));

  SignalRelay relay({SIGINT, SIGTERM, SIGCHLD});
  std::string token;
  while (token.empty()) {
    DDPX_REQUIRE(Clock::now() < deadline, "node {}: node 0's launcher at {} did not start the job within "
                 "--join-timeout {} s (other nodes missing?)", node.node_rank, endpoint, join_seconds);
    pollfd waiters[2] = {{relay.read_fd(), POLLIN, 0}, {connection.fd(), POLLIN, 0}};
    ::poll(waiters, 2, 100);
    for (int signal_number : relay.drain())
      if (signal_number != SIGCHLD) {
        write_all(options.stderr_fd, "ddpx launch: " + interrupt_verdict(node.node_rank, address, signal_number).message + "\n");
        return 130;
      }
    std::vector<std::string> lines;
    const bool open = connection.receive(lines);
    for (const std::string& line : lines) {
      const std::vector<std::string> parts = split(line, 2);
      if (parts[0] == "START" && parts.size() >= 2) token = parts[1];
      if (parts[0] == "REFUSE") fail("{}", parts.size() > 1 ? line.substr(7) : "node 0 refused this node");
      if (parts[0] == "ABORT" && parts.size() == 3) fail("{}", parts[2]);
    }
    DDPX_REQUIRE(open || !token.empty(), "node {}: node 0's launcher at {} closed the connection before the job "
                 "started", node.node_rank, endpoint);
  }

  WorkerGroup group(options.executable.empty() ? self_executable() : options.executable, argv,
                    node_workers(nproc, node, master_ip, token), options.stdout_fd, options.stderr_fd,
                    options.grace_period);
  bool reported = false, done = false;
  auto next_ping = Clock::now();
  for (;;) {
    if (Clock::now() >= next_ping) {
      connection.send("PING");
      next_ping = Clock::now() + kHeartbeatEvery;
    }
    std::vector<pollfd> waiters{{relay.read_fd(), POLLIN, 0}, {connection.fd(), POLLIN, 0}};
    group.poll_once(waiters, 100);
    auto report = [&](const Verdict& verdict) {
      if (reported) return;
      reported = true;
      connection.send(fmt::format("FAIL {} {} {}", verdict.priority, verdict.exit_code, verdict.message));
    };
    for (int signal_number : relay.drain())
      if (signal_number != SIGCHLD) {
        group.signal_all(signal_number);
        group.kill_after_grace();
        report(interrupt_verdict(node.node_rank, address, signal_number));
      }
    if (group.first_failure()) {
      group.stop();
      report(worker_verdict(group, node.node_rank, address));
    }
    if (!reported && !done && group.finished() && group.all_succeeded()) done = connection.send("DONE");
    std::vector<std::string> lines;
    const bool open = connection.receive(lines);
    for (const std::string& line : lines) {
      const std::vector<std::string> parts = split(line, 2);
      if (parts[0] == "END" && done) return 0;
      if (parts[0] == "ABORT" && parts.size() == 3 && number(parts[1]))
        return finish_with(group, {0, *number(parts[1]), parts[2]}, options.stderr_fd);
    }
    const bool silent = Clock::now() - connection.last_heard() > node.heartbeat_timeout;
    if (!open || silent)
      return finish_with(group,
                         {1, 1, fmt::format("node {}: {} node 0's launcher at {}; this node's workers were stopped",
                                            node.node_rank, open ? "heard nothing for the heartbeat timeout from"
                                                                 : "lost the connection to", endpoint)},
                         options.stderr_fd);
  }
}

}  // namespace

int launch_node_workers(int nproc, const NodeOptions& node, const std::vector<std::string>& argv,
                        const LaunchOptions& options) {
  DDPX_REQUIRE(nproc >= 1, "--nproc-per-node must be at least 1, got {}", nproc);
  DDPX_REQUIRE(!argv.empty(), "launcher: the worker command line is empty (argv[0] is required)");
  DDPX_REQUIRE(node.nnodes >= 1, "--nnodes must be at least 1, got {}", node.nnodes);
  DDPX_REQUIRE(node.node_rank >= 0 && node.node_rank < node.nnodes,
               "--node-rank {} is out of range for --nnodes {}: give each node a rank in 0..{}", node.node_rank,
               node.nnodes, node.nnodes - 1);
  DDPX_REQUIRE(node.master_port >= 1 && node.master_port <= 65534,
               "--master-port {} is not usable: ddpx needs it and the port after it (1..65534)", node.master_port);
  const std::string master_ip = resolve_ipv4(node.master_addr);
  if (node.node_rank == 0) return Node0(nproc, node, master_ip, options).run(argv);
  return run_joining_node(nproc, node, master_ip, argv, options);
}

}  // namespace ddpx
