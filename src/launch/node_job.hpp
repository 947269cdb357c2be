// What both sides of the multi-node launcher share (internal to dist/: node_launcher.cpp, node_launcher_node0.cpp):
// the protocol's name and timings, the verdict a job ends with, the workers' environment, and the two roles.
// Guarantees: node_workers() gives worker `local` of node R the ranks and variables launcher.hpp promises;
// finish_with() stops this node's workers (SIGTERM, SIGKILL after the grace period), waits for them (bounded),
// prints "ddpx launch: <verdict>" and returns the verdict's exit status.
#pragma once
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "launch/launcher.hpp"
#include "launch/worker_group.hpp"

namespace ddpx::node_job {

inline constexpr auto kHeartbeatEvery = std::chrono::seconds(1);
inline constexpr auto kSettle = std::chrono::milliseconds(500);  // node 0 collects reports this long

// How the job ends. priority: 0 a launcher interrupted; 1 a worker killed by a signal, or a launcher lost;
// 2 a worker that exited non-zero (lower wins: see node_launcher.cpp).
struct Verdict {
  int priority = 2;
  int exit_code = 1;
  std::string message;
};

// The secret every node's launcher must hold: DDPX_JOB_TOKEN. Required unless master_ip is loopback (only this host
// reaches it: a note on stderr says any local process could still join) or DDPX_ALLOW_NO_TOKEN=1 (a trusted
// network); "" then. Throws naming both variables otherwise.
std::string shared_secret(const std::string& master_ip);
std::string local_address(int fd);  // this side's IPv4 address of a connected socket
Verdict worker_verdict(const WorkerGroup& group, int node_rank, const std::string& address);
Verdict interrupt_verdict(int node_rank, const std::string& address, int signal_number);
int finish_with(WorkerGroup& group, const Verdict& verdict, int stderr_fd);
std::vector<WorkerGroup::Spawn> node_workers(int nproc, const NodeOptions& node, const std::string& master_ip,
                                             const std::string& token);

int run_node0(int nproc, const NodeOptions& node, const std::string& master_ip, const std::string& secret,
              const std::vector<std::string>& argv, const LaunchOptions& options);
int run_joining_node(int nproc, const NodeOptions& node, const std::string& master_ip, const std::string& secret,
                     const std::vector<std::string>& argv, const LaunchOptions& options);

}  // namespace ddpx::node_job
