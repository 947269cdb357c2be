// launch_driver: a small program for the launcher tests. Run as `launch_driver N MODE`, it launches N copies of
// itself through launch_local_workers(); as `launch_driver mpirun N MODE`, through launch_under_mpirun(); as
// `launch_driver nodes NNODES NODE_RANK MASTER_ADDR MASTER_PORT NPROC JOIN_TIMEOUT_S HEARTBEAT_S MODE`, as one
// node of a multi-node job through launch_node_workers(). As a
// worker it joins the TCP rendezvous (local launcher only), prints who it is (with its pid) and then behaves as
// MODE says:
//   ok          every rank exits 0
//   sleep       every rank sleeps (the test interrupts the launcher)
//   fail        rank 1 writes a line to stderr and exits 3; the others sleep until the launcher stops them
//   signal      rank 1 kills itself with SIGKILL; the others sleep
//   stubborn    rank 1 exits 4; the others ignore SIGTERM and sleep, so only SIGKILL ends them
// MODE:K (fail:2, signal:3) makes rank K the failing one instead of rank 1.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "dist/bootstrap.hpp"
#include "dist/tcp_rendezvous.hpp"
#include "launch/launcher.hpp"

int main(int argc, char** argv) {
  using namespace ddpx;
  try {
    if (!launched_as_worker() && argc == 10 && std::string(argv[1]) == "nodes") {
      NodeOptions node;
      node.nnodes = std::atoi(argv[2]);
      node.node_rank = std::atoi(argv[3]);
      node.master_addr = argv[4];
      node.master_port = std::atoi(argv[5]);
      node.join_timeout = std::chrono::seconds(std::atoi(argv[7]));
      node.heartbeat_timeout = std::chrono::seconds(std::atoi(argv[8]));
      LaunchOptions options;
      options.grace_period = std::chrono::milliseconds(1000);
      return launch_node_workers(std::atoi(argv[6]), node, {argv[0], argv[9]}, options);
    }
    if (!launched_as_worker()) {
      const bool under_mpirun = argc > 1 && std::string(argv[1]) == "mpirun";
      const int first = under_mpirun ? 2 : 1;
      if (argc < first + 2) {
        std::fprintf(stderr, "usage: launch_driver [mpirun] N MODE\n");
        return 2;
      }
      std::vector<std::string> worker_argv{argv[0]};
      for (int i = first + 1; i < argc; ++i) worker_argv.push_back(argv[i]);
      LaunchOptions options;
      options.grace_period = std::chrono::milliseconds(1000);
      const int nproc = std::atoi(argv[first]);
      return under_mpirun ? launch_under_mpirun(nproc, worker_argv, options)
                          : launch_local_workers(nproc, worker_argv, options);
    }
    std::string mode = argc > 1 ? argv[1] : "ok";
    int failing_rank = 1;
    if (const size_t colon = mode.find(':'); colon != std::string::npos) {
      failing_rank = std::atoi(mode.c_str() + colon + 1);
      mode.resize(colon);
    }
    const WorldInfo world = detect_world();
    if (world.launcher == ddpx::LauncherKind::torchrun) {
      std::string greeting = "hello from rank 0";
      RendezvousConfig config{world.master_addr, world.master_port, world.rank, world.world_size, world.job_token,
                              std::chrono::seconds(20)};
      std::vector<uint8_t> got =
          rendezvous_broadcast(config, std::vector<uint8_t>(greeting.begin(), greeting.end()));
      std::printf("rank %d of %d (local %d) got '%s' as pid %d, %d rank(s) on this node\n", world.rank,
                  world.world_size, world.local_rank, std::string(got.begin(), got.end()).c_str(),
                  static_cast<int>(::getpid()), world.local_world_size);
    } else {
      std::printf("rank %d of %d via %s\n", world.rank, world.world_size, ddpx::launcher_name(world.launcher));
    }
    std::fflush(stdout);
    if (mode == "ok") return 0;
    if (mode == "sleep") {
      ::sleep(60);
      return 0;
    }
    if (world.rank == failing_rank) {
      if (mode == "signal") ::raise(SIGKILL);
      std::fprintf(stderr, "an earlier line\nrank %d failing on purpose\n", failing_rank);
      return mode == "stubborn" ? 4 : 3;
    }
    if (mode == "stubborn") ::signal(SIGTERM, SIG_IGN);
    ::sleep(60);
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "ddpx: error: %s\n", e.what());
    return 2;
  }
}
