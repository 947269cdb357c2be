// Multi-node launcher helpers shared by node 0 and the joining nodes (see node_job.hpp).
#include <arpa/inet.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "core/error.hpp"
#include "launch/child_environment.hpp"
#include "launch/launcher.hpp"
#include "launch/node_channel.hpp"
#include "launch/node_job.hpp"
#include "launch/worker_group.hpp"

namespace ddpx::node_job {

std::string shared_secret(const std::string& master_ip) {
  const char* secret = std::getenv("DDPX_JOB_TOKEN");
  if (secret && *secret) return secret;
  if (master_ip.rfind("127.", 0) == 0) {  // loopback: only this host reaches the control channel
    fmt::print(stderr,
               "ddpx launch: note: --master-addr {} without DDPX_JOB_TOKEN: any process on this host (any user's) that "
               "reaches the port can join the job as a node; set DDPX_JOB_TOKEN to the same secret for every node to "
               "keep them out\n",
               master_ip);
    return "";
  }
  const char* allowed = std::getenv("DDPX_ALLOW_NO_TOKEN");
  if (allowed && std::string(allowed) == "1") return "";
  fail("--master-addr {} is reachable from other machines, and the launchers of a multi-node job prove to each other "
       "that they belong to it with a shared secret: set DDPX_JOB_TOKEN to the same secret on every node (for "
       "example `export DDPX_JOB_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \\n')` in the batch script, passed "
       "to every node), or DDPX_ALLOW_NO_TOKEN=1 on a network you trust", master_ip);
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

}  // namespace ddpx::node_job
