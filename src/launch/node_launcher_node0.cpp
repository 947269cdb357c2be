// Multi-node launcher, node 0's side: serves the control channel, admits the other launchers once they proved the
// shared secret (Note [Authenticated control channel], node_messages.cpp), checks that they agree on --nnodes and
// --nproc-per-node and that each node rank is in range and taken once, starts the job, runs its own workers and
// decides how the job ends (see node_launcher.cpp for the verdict rule).
// A connection that does not prove the secret, sends anything malformed or stays silent past kHandshakePatience is
// dropped (said on stderr, at most kMaxDropNotes times) and the job goes on; at most kMaxPending connections wait
// for their JOIN at once (the oldest is dropped). A node that proved the secret and then misbehaves (a wrong
// --nnodes, a node rank out of range or taken, a malformed message) is that node's failure, named in the error.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <deque>
#include <optional>
#include <random>

#include "core/error.hpp"
#include "launch/child_environment.hpp"
#include "launch/launcher.hpp"
#include "launch/node_channel.hpp"
#include "launch/node_job.hpp"
#include "launch/node_messages.hpp"
#include "launch/worker_group.hpp"

namespace ddpx::node_job {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kHandshakePatience = std::chrono::seconds(10);
constexpr size_t kMaxPending = 64;
constexpr int kMaxDropNotes = 20;

struct Peer {
  LineConnection connection;
  std::string address;
  std::string join_nonce;
  bool joined = false;
  bool done = false;
};

// Accepted, challenged, its JOIN not yet read.
struct Pending {
  LineConnection connection;
  std::string address;
  std::string challenge;
  Clock::time_point deadline;
};

// A line from the network, for a message: printable ASCII only, at most 80 characters.
std::string printable(const std::string& line) {
  std::string text;
  for (char c : line.substr(0, 80)) text += (c >= 32 && c < 127) ? c : '?';
  return line.size() > 80 ? text + "..." : text;
}

class Node0 {
 public:
  Node0(int nproc, const NodeOptions& node, const std::string& master_ip, const std::string& secret,
        const LaunchOptions& options)
      : nproc_(nproc), node_(node), master_ip_(master_ip), secret_(secret), options_(options),
        peers_(size_t(node.nnodes)) {}
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
      const std::string job_nonce = random_nonce();
      for (size_t r = 1; r < peers_.size(); ++r)
        peers_[r].connection.send(start_line(secret_, peers_[r].join_nonce, job_nonce));
      const std::string token = workers_token(secret_, job_nonce);
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

  void note_drop(const std::string& address, const std::string& why) {
    if (drop_notes_ >= kMaxDropNotes) return;
    ++drop_notes_;
    write_all(options_.stderr_fd, "ddpx launch: node 0 dropped a connection from " + address + ": " + why +
                                      (drop_notes_ == kMaxDropNotes ? " (further drops are not reported)" : "") + "\n");
  }

  // The first line of a challenged connection. Returns false when the connection is dropped (unauthenticated or
  // malformed: that connection's end, not the job's); throws for a node that proved the secret and misbehaves.
  bool accept_join(Pending& pending, const std::string& line) {
    const std::optional<Join> join = parse_join(line);
    if (!join) {
      pending.connection.send("REFUSE not a " + std::string(kProtocol) + " JOIN with a proof (run the same ddpx on "
                              "every node)");
      note_drop(pending.address, "its first line is not a " + std::string(kProtocol) + " JOIN: '" + printable(line) +
                                     "'");
      return false;
    }
    if (!join_proof_holds(secret_, pending.challenge, *join)) {
      pending.connection.send("REFUSE the JOIN does not prove the job's secret");
      note_drop(pending.address, "its JOIN does not prove the job's secret (is DDPX_JOB_TOKEN the same on every "
                                 "node?)");
      return false;
    }
    const std::string& address = pending.address;
    auto refuse = [&](const std::string& message) {
      pending.connection.send("REFUSE " + message);
      fail("{}", message);
    };
    if (join->nnodes != node_.nnodes)
      refuse(fmt::format("--nnodes differs between nodes: node {} ({}) was started with --nnodes {}, node 0 ({}) "
                         "with --nnodes {}; give every node's launcher the same --nnodes",
                         join->node_rank, address, join->nnodes, master_ip_, node_.nnodes));
    if (join->nproc != nproc_)
      refuse(fmt::format("--nproc-per-node differs between nodes: node {} ({}) was started with --nproc-per-node "
                         "{}, node 0 ({}) with {}; give every node the same --nproc-per-node",
                         join->node_rank, address, join->nproc, master_ip_, nproc_));
    if (join->node_rank <= 0 || join->node_rank >= node_.nnodes)
      refuse(fmt::format("the launcher at {} has --node-rank {}, outside 1..{} (node 0 is {}): give each node its "
                         "own --node-rank in 0..{}", address, join->node_rank, node_.nnodes - 1, master_ip_,
                         node_.nnodes - 1));
    Peer& peer = peers_[size_t(join->node_rank)];
    if (peer.joined)
      refuse(fmt::format("--node-rank {} was given to two nodes ({} and {}): each node needs its own --node-rank "
                         "in 0..{}", join->node_rank, peer.address, address, node_.nnodes - 1));
    peer.connection = std::move(pending.connection);
    peer.address = address;
    peer.join_nonce = join->nonce;
    peer.joined = true;
    return true;
  }

  // Waits for every other node's JOIN (bounded by --join-timeout). False when interrupted.
  bool join(SignalRelay& relay) {
    const auto deadline = Clock::now() + node_.join_timeout;
    std::deque<Pending> pending;
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
      for (const Pending& waiting : pending) waiters.push_back({waiting.connection.fd(), POLLIN, 0});
      ::poll(waiters.data(), waiters.size(), 100);
      for (int signal_number : relay.drain())
        if (signal_number != SIGCHLD) {
          const Verdict verdict = interrupt_verdict(0, master_ip_, signal_number);
          abort_all(verdict.exit_code, verdict.message);
          write_all(options_.stderr_fd, "ddpx launch: " + verdict.message + "\n");
          return false;
        }
      for (int fd; (fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC)) >= 0;) {
        if (pending.size() >= kMaxPending) {
          note_drop(pending.front().address, "more than " + std::to_string(kMaxPending) + " connections were waiting "
                                             "to join; the oldest goes");
          pending.pop_front();
        }
        Pending& added = pending.emplace_back();
        added.connection = LineConnection(fd);
        added.address = peer_address(fd);
        added.challenge = random_nonce();
        added.deadline = Clock::now() + kHandshakePatience;
        added.connection.send("CHALLENGE " + added.challenge);
      }
      for (auto it = pending.begin(); it != pending.end();) {
        std::vector<std::string> lines;
        const bool open = it->connection.receive(lines);
        if (!lines.empty()) {
          accept_join(*it, lines.front());  // joined (moved into its Peer) or dropped
          it = pending.erase(it);
        } else if (!open || Clock::now() > it->deadline) {
          if (open) note_drop(it->address, "it sent no JOIN within " + std::to_string(kHandshakePatience.count()) + " s");
          it = pending.erase(it);
        } else {
          ++it;
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
          if (line == "PING") continue;
          if (line == "DONE") {
            peer.done = true;
          } else if (const std::optional<Fail> report = parse_fail(line)) {
            offer({report->priority, report->exit_code, report->message});
          } else {  // a node that proved the secret and then sends garbage: that node fails
            offer({1, 1, fmt::format("node {}'s launcher ({}) sent a malformed message '{}'; every node's workers "
                                     "were stopped", r, peer.address, printable(line))});
          }
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
  std::string secret_;
  LaunchOptions options_;
  int drop_notes_ = 0;
  std::vector<Peer> peers_;  // by node rank; [0] unused
  int listener_ = -1;
};

}  // namespace

int run_node0(int nproc, const NodeOptions& node, const std::string& master_ip, const std::string& secret,
              const std::vector<std::string>& argv, const LaunchOptions& options) {
  return Node0(nproc, node, master_ip, secret, options).run(argv);
}

}  // namespace ddpx::node_job
