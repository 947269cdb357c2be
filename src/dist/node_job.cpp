// Multi-node launcher helpers shared by node 0 and the joining nodes (see node_job.hpp).
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
