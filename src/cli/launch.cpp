// Worker launch for --nproc-per-node; the process management itself lives in launch/launcher.
#include "cli/launch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "dist/backend_registry.hpp"
#include "dist/bootstrap.hpp"
#include "launch/launcher.hpp"

namespace ddpx::cli {
namespace {
std::vector<std::string>& command_line() {
  static std::vector<std::string> args;
  return args;
}
}  // namespace

void remember_command_line(int argc, char** argv) { command_line().assign(argv, argv + argc); }
const std::vector<std::string>& remembered_command_line() { return command_line(); }

bool running_as_worker() { return launched_as_worker(); }

void add_node_flags(CLI::App* cmd, NodeFlags& flags, const std::string& group) {
  cmd->add_option("--nnodes", flags.nnodes,
                  "multi-node: run `ddpx ...` once per node, each with the same --nnodes N, --master-addr, "
                  "--master-port and --nproc-per-node G, and its own --node-rank; ranks are node rank * G + local. torchrun's names and meanings; its underscore "
                  "spellings (--node_rank, --master_addr, --master_port, --nproc_per_node) work too. Off loopback every "
                  "node needs the same secret in DDPX_JOB_TOKEN: the launchers prove it to each other, never send it, "
                  "and node 0 drops any connection that cannot")
      ->check(CLI::Range(1, 4096))
      ->group(group);
  flags.given_only_with_nnodes = {
      cmd->add_option("--node-rank,--node_rank", flags.node_rank, "this node's rank, 0..N-1 (node 0 serves)")
          ->group(group),
      cmd->add_option("--master-addr,--master_addr", flags.master_addr,
                      "node 0's address or host name (node 0 listens only there)")
          ->group(group),
      cmd->add_option("--master-port,--master_port", flags.master_port,
                      "node 0's launchers' control channel; the workers' rendezvous uses the next port (P+1)")
          ->group(group),
      cmd->add_option("--join-timeout", flags.join_timeout_s,
                      "seconds for every node to join node 0's launcher before all of them fail")
          ->group(group)};
}

bool start_workers_here(int nproc, const NodeFlags& nodes) {
  if (nodes.nnodes <= 1) {
    for (CLI::Option* option : nodes.given_only_with_nnodes)
      DDPX_REQUIRE(option->count() == 0, "{} applies only to a multi-node job: give --nnodes N (N > 1) too, on every "
                   "node", option->get_name());
  }
  if (nodes.nnodes > 1) {
    if (const char* marker = std::getenv(kWorkerMarker); marker && std::string(marker) == "1") return false;
    for (const char* mpi_variable : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
      DDPX_REQUIRE(std::getenv(mpi_variable) == nullptr,
                   "--nnodes {}: this process was started by an MPI launcher ({} is set), which already spans the "
                   "nodes; start the ranks one way: `mpirun -H host1,host2 -np N ddpx ...` without --nnodes, or "
                   "`ddpx ... --nnodes N` once per node without mpirun", nodes.nnodes, mpi_variable);
    if (const std::optional<LaunchedRank> launched = launched_rank())
      fail("--nnodes {}: this process is already rank {} of {} started by {}; start the ranks one way: either "
           "`ddpx ... --nnodes N --nproc-per-node G` once per node, or {} without --nnodes", nodes.nnodes,
           launched->rank, launched->world_size, launched->launcher, launched->launcher);
    return true;
  }
  if (nproc <= 1) return false;
  const std::optional<LaunchedRank> launched = launched_rank();
  if (!launched) return true;
  if (const char* marker = std::getenv(kWorkerMarker); marker && std::string(marker) == "1") return false;
  fail("--nproc-per-node {}: this process is already rank {} of {} started by {}; start the ranks one way: either "
       "`ddpx ... --nproc-per-node N` on its own, or {} without --nproc-per-node",
       nproc, launched->rank, launched->world_size, launched->launcher, launched->launcher);
}

void require_single_process(const std::string& command) {
  const std::optional<LaunchedRank> launched = launched_rank();
  if (!launched) return;
  fail("ddpx {} runs as one process and starts the ranks of every run itself, but this process is rank {} of {} "
       "started by {}; run `ddpx {} ...` as one process (in an sbatch script: directly, or `srun -n 1 ddpx {} ...`)",
       command, launched->rank, launched->world_size, launched->launcher, command, command);
}

std::string cpu_oversubscription_note(int nproc, unsigned hardware_threads) {
  if (hardware_threads == 0 || static_cast<unsigned>(nproc) <= hardware_threads) return "";
  return fmt::format("ddpx launch: note: {} CPU ranks on {} hardware thread(s): the ranks time-share the cores, so "
                     "each runs slower than alone (results are correct; throughput is that of an oversubscribed "
                     "machine)", nproc, hardware_threads);
}

LaunchTarget launch_target(const TrainOptions& options) {
  return {.device = options.device, .backend = options.backend, .comm_timeout_s = options.comm_timeout_s};
}

int launch_workers(int nproc, const LaunchTarget& options, const NodeFlags& nodes) {
  // The workers run the same command line without the launch flags ("--flag V" and "--flag=V" forms).
  static const char* const kLaunchFlags[] = {"--nproc-per-node", "--nproc_per_node", "--nnodes",
                                             "--node-rank",      "--node_rank",       "--master-addr",
                                             "--master_addr",    "--master-port",     "--master_port",
                                             "--join-timeout"};
  std::vector<std::string> args;
  const auto& all = command_line();
  for (size_t i = 0; i < all.size(); ++i) {
    bool launch_flag = false;
    for (const std::string flag : kLaunchFlags) {
      if (all[i] == flag) {
        ++i;
        launch_flag = true;
        break;
      }
      if (all[i].rfind(flag + "=", 0) == 0) launch_flag = true;
    }
    if (!launch_flag) args.push_back(all[i]);
  }
  DDPX_REQUIRE(nproc <= 1024, "--nproc-per-node {} is not a plausible number of local workers", nproc);
  if (nodes.nnodes > 1) {
    // The workers see torchrun-style variables, so --backend auto picks gloo on the CPU; MPI needs mpirun.
    require_spans_nnodes(options.backend, options.device, nodes.nnodes);
    DDPX_REQUIRE(!nodes.master_addr.empty(), "--nnodes {}: give --master-addr (node 0's address) on every node",
                 nodes.nnodes);
    DDPX_REQUIRE(nodes.join_timeout_s > 0 && nodes.join_timeout_s <= 86400,
                 "--join-timeout {}: give seconds in (0, 86400]", nodes.join_timeout_s);
    NodeOptions node;
    node.nnodes = nodes.nnodes;
    node.node_rank = nodes.node_rank;
    node.master_addr = nodes.master_addr;
    node.master_port = nodes.master_port;
    node.join_timeout = std::chrono::milliseconds(static_cast<int64_t>(nodes.join_timeout_s * 1000));
    node.heartbeat_timeout = std::chrono::milliseconds(static_cast<int64_t>(
        std::clamp(options.comm_timeout_s, 1.0, 86400.0) * 1000));
    return launch_node_workers(std::max(nproc, 1), node, args);
  }
  if (options.device == Device::cpu) {
    const std::string note = cpu_oversubscription_note(nproc, std::thread::hardware_concurrency());
    if (!note.empty()) fmt::print(stderr, "{}\n", note);
  }
  // The registry says: GPUs and Gloo need no MPI (N processes of our own); the MPI backend runs under mpirun.
  if (local_launch(options.backend, options.device) == LocalLaunch::own_processes)
    return launch_local_workers(nproc, args);
  return launch_under_mpirun(nproc, args);
}

}  // namespace ddpx::cli
