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

#include "core/error.hpp"
#include "dist/child_environment.hpp"
#include "dist/launcher.hpp"
#include "dist/node_channel.hpp"
#include "dist/node_job.hpp"
#include "dist/worker_group.hpp"

namespace ddpx {
namespace node_job {

using Clock = std::chrono::steady_clock;

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
  DDPX_REQUIRE(!argv.empty(), "launcher: the worker command line is empty (argv[0] is required)");
  DDPX_REQUIRE(node.nnodes >= 1, "--nnodes must be at least 1, got {}", node.nnodes);
  DDPX_REQUIRE(node.node_rank >= 0 && node.node_rank < node.nnodes,
               "--node-rank {} is out of range for --nnodes {}: give each node a rank in 0..{}", node.node_rank,
               node.nnodes, node.nnodes - 1);
  DDPX_REQUIRE(node.master_port >= 1 && node.master_port <= 65534,
               "--master-port {} is not usable: ddpx needs it and the port after it (1..65534)", node.master_port);
  const std::string master_ip = resolve_ipv4(node.master_addr);
  if (node.node_rank == 0) return node_job::run_node0(nproc, node, master_ip, argv, options);
  return node_job::run_joining_node(nproc, node, master_ip, argv, options);
}

}  // namespace ddpx
