// Multi-node launcher: one launcher per node; node 0's serves the control channel, the others join it, and all of
// them supervise their own workers (WorkerGroup) and agree on how the job ends. Protocol: node_messages.hpp (one
// text line each; the JOIN and START prove the shared secret, Note [Authenticated control channel]):
//   0 -> node r  CHALLENGE <nonce>           (at once)
//   node r -> 0  JOIN ddpx-launch-2 <nnodes> <node rank> <nproc per node> <nonce> <proof>
//   0 -> node r  START <job nonce> <proof>   | REFUSE <message> (then both fail with it)
//   both ways    PING                        (every second; silence past the heartbeat timeout = launcher lost)
//   node r -> 0  FAIL <priority> <exit code> <message>   (first local worker failure, or an interrupt)
//   node r -> 0  DONE                        (all its workers exited 0)
//   0 -> node r  ABORT <exit code> <message> (the job's verdict) | END (every node is done)
// A message that does not parse is the sender's failure (node_messages.hpp checks every field).
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

#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "launch/child_environment.hpp"
#include "launch/launcher.hpp"
#include "launch/node_channel.hpp"
#include "launch/node_job.hpp"
#include "launch/node_messages.hpp"
#include "launch/worker_group.hpp"

namespace ddpx {
namespace node_job {

using Clock = std::chrono::steady_clock;

int run_joining_node(int nproc, const NodeOptions& node, const std::string& master_ip, const std::string& secret,
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
  const std::string nonce = random_nonce();

  SignalRelay relay({SIGINT, SIGTERM, SIGCHLD});
  std::string token;
  bool joined = false;
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
      if (const auto refusal = parse_refuse(line)) fail("{}", *refusal);
      if (const auto abort = parse_abort(line); abort && joined) fail("{}", abort->message);
      if (const auto challenge = parse_challenge(line); challenge && !joined) {
        connection.send(join_line(secret, *challenge, node.nnodes, node.node_rank, nproc, nonce));
        joined = true;
        continue;
      }
      const std::optional<Start> start = parse_start(line);
      DDPX_REQUIRE(start && joined, "node {}: the launcher at {} sent '{}' where node 0 sends {}: is that node 0 of "
                   "this job, running the same ddpx?", node.node_rank, endpoint, line.substr(0, 80),
                   joined ? "START" : "CHALLENGE");
      DDPX_REQUIRE(start_proof_holds(secret, nonce, *start), "node {}: the launcher at {} could not prove that it "
                   "holds the job's secret; is DDPX_JOB_TOKEN the same on every node (and is that node 0 of this "
                   "job)?", node.node_rank, endpoint);
      token = workers_token(secret, start->job_nonce);
      break;
    }
    DDPX_REQUIRE(open || !token.empty(), "node {}: node 0's launcher at {} closed the connection before the job "
                 "started (if node 0 said it dropped this node's connection: is DDPX_JOB_TOKEN the same on every "
                 "node?)", node.node_rank, endpoint);
  }

  WorkerGroup group(options.executable.empty() ? self_executable() : options.executable, argv,
                    node_workers(nproc, node, master_ip, token), options.stdout_fd, options.stderr_fd,
                    options.grace_period);
  bool reported = false, done = false;
  auto next_ping = Clock::now();
  for (;;) {
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
      if (line == "PING" || (line == "END" && !done)) continue;
      if (line == "END") return 0;
      if (const std::optional<Abort> abort = parse_abort(line))
        return finish_with(group, {0, abort->exit_code, abort->message}, options.stderr_fd);
      return finish_with(group, {1, 1, fmt::format("node {}: node 0's launcher at {} sent a malformed message; "
                                                   "this node's workers were stopped", node.node_rank, endpoint)},
                         options.stderr_fd);
    }
    const bool silent = Clock::now() - connection.last_heard() > node.heartbeat_timeout;
    if (open && !silent && Clock::now() >= next_ping) {  // after reading: node 0's last words come first
      connection.send("PING");
      next_ping = Clock::now() + kHeartbeatEvery;
    }
    if (!open || silent)
      return finish_with(group,
                         {1, 1, fmt::format("node {}: {} node 0's launcher at {}; this node's workers were stopped",
                                            node.node_rank, open ? "heard nothing for the heartbeat timeout from"
                                                                 : "lost the connection to", endpoint)},
                         options.stderr_fd);
  }
}


}  // namespace node_job

int launch_node_workers(int nproc, const NodeOptions& node, const std::vector<std::string>& argv,
                        const LaunchOptions& options) {
  DDPX_REQUIRE(nproc >= 1, "--nproc-per-node must be at least 1, got {}", nproc);
  DDPX_INTERNAL_ASSERT(!argv.empty(), "launcher: the worker command line is empty (argv[0] is required)");
  DDPX_REQUIRE(node.nnodes >= 1, "--nnodes must be at least 1, got {}", node.nnodes);
  DDPX_REQUIRE(node.node_rank >= 0 && node.node_rank < node.nnodes,
               "--node-rank {} is out of range for --nnodes {}: give each node a rank in 0..{}", node.node_rank,
               node.nnodes, node.nnodes - 1);
  DDPX_REQUIRE(node.master_port >= 1 && node.master_port <= 65534,
               "--master-port {} is not usable: ddpx needs it and the port after it (1..65534)", node.master_port);
  const std::string master_ip = resolve_ipv4(node.master_addr);
  const std::string secret = node_job::shared_secret(master_ip);
  if (node.node_rank == 0) return node_job::run_node0(nproc, node, master_ip, secret, argv, options);
  return node_job::run_joining_node(nproc, node, master_ip, secret, argv, options);
}

}  // namespace ddpx
