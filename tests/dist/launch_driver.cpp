// launch_driver: a small program for the launcher tests. Run as `launch_driver N MODE`, it launches N copies of
// itself through launch_local_workers(); as `launch_driver mpirun N MODE`, through launch_under_mpirun(). As a
// worker it joins the TCP rendezvous (local launcher only), prints who it is (with its pid) and then behaves as
// MODE says:
//   ok          every rank exits 0
//   sleep       every rank sleeps (the test interrupts the launcher)
//   fail        rank 1 writes a line to stderr and exits 3; the others sleep until the launcher stops them
//   signal      rank 1 kills itself with SIGKILL; the others sleep
//   stubborn    rank 1 exits 4; the others ignore SIGTERM and sleep, so only SIGKILL ends them
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "dist/bootstrap.hpp"
#include "dist/launcher.hpp"
#include "dist/tcp_rendezvous.hpp"

int main(int argc, char** argv) {
  using namespace ddpx;
  try {
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
    const std::string mode = argc > 1 ? argv[1] : "ok";
    const WorldInfo world = detect_world();
    if (world.launcher == "torchrun") {
      std::string greeting = "hello from rank 0";
      RendezvousConfig config{world.master_addr, world.master_port, world.rank, world.world_size, world.job_token,
                              std::chrono::seconds(20)};
      std::vector<uint8_t> got =
          rendezvous_broadcast(config, std::vector<uint8_t>(greeting.begin(), greeting.end()));
      std::printf("rank %d of %d (local %d) got '%s' as pid %d\n", world.rank, world.world_size, world.local_rank,
                  std::string(got.begin(), got.end()).c_str(), static_cast<int>(::getpid()));
    } else {
      std::printf("rank %d of %d via %s\n", world.rank, world.world_size, world.launcher.c_str());
    }
    std::fflush(stdout);
    if (mode == "ok") return 0;
    if (mode == "sleep") {
      ::sleep(60);
      return 0;
    }
    if (world.rank == 1) {
      if (mode == "signal") ::raise(SIGKILL);
      std::fprintf(stderr, "an earlier line\nrank 1 failing on purpose\n");
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
