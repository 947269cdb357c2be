// Multi-node launcher, node 0's side: serves the control channel, admits the other launchers (checking that they
// agree on --nnodes and --nproc-per-node and that no node rank is taken twice), hands out the job token, runs its
// own workers and decides how the job ends (see node_launcher.cpp for the protocol and the verdict rule).
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

#include "core/error.hpp"
#include "dist/child_environment.hpp"
#include "dist/launcher.hpp"
#include "dist/node_channel.hpp"
#include "dist/node_job.hpp"
#include "dist/worker_group.hpp"

namespace ddpx::node_job {
namespace {

using Clock = std::chrono::steady_clock;

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
  ~Node0() {
    if (listener_ >= 0) ::close(listener_);
  }
  Node0(const Node0&) = delete;
  Node0& operator=(const Node0&) = delete;

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
        if (!open) peer.connection.close();  // a silent one still gets the verdict, should it wake up
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

}  // namespace

int run_node0(int nproc, const NodeOptions& node, const std::string& master_ip, const std::vector<std::string>& argv,
              const LaunchOptions& options) {
  return Node0(nproc, node, master_ip, options).run(argv);
}

}  // namespace ddpx::node_job
