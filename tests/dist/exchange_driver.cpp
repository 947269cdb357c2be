// exchange_driver: a worker for the torchrun, mpirun and Slurm tests (tests/dist/torchrun_test.sh,
// check_exchange.sh, slurm_jobs.sh). Started by a launcher (or alone), it runs ddpx's bootstrap as `train` does
// for NCCL: detect_world(), MPI brought up where an MPI launcher started it (needs_mpi_session), then
// broadcast_from_rank0() with a 128-byte payload in place of the NCCL unique id (random bytes on rank 0, a filler
// elsewhere that must be replaced), then, where the route offers it, allgather_bytes() of a per-rank payload of
// varying length. It prints, for the script to compare across ranks and nodes (A: torchrun's
// TORCHELASTIC_RESTART_COUNT, 0 without it):
//   exchange_driver(A): rank R of W route=<route> local=L
//   exchange_driver(A): rank 0 sent <hex>                  (rank 0 only)
//   exchange_driver(A): rank R got <hex>
//   exchange_driver(A): rank R contributed <hex>           (all-gather routes only)
//   exchange_driver(A): rank R gathered <hex0>,<hex1>,...  (all-gather routes only)
// It also checks by itself that its own all-gather slot is what it contributed. Exit: 0 done, 1 a check failed,
// 2 a ddpx::Error (printed). `exchange_driver free-port` prints a free loopback TCP port and exits.
// Options: --timeout S (default 60) bounds each exchange; --absent-rank R makes rank R exit 0 at once, so the
// others must time out naming it; --fail-once-rank R makes rank R exit 3 after its exchanges in attempt 0, so
// torchrun (with --max_restarts 1) restarts every worker and the next attempt must exchange afresh; rank 0 then
// starts its exchange 1 s late, so a rank that read the first attempt's keys would report rank 0's old bytes.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "dist/backend_registry.hpp"
#include "dist/bootstrap.hpp"
#include "dist/bootstrap_exchange.hpp"
#include "dist/free_ports.hpp"
#ifdef DDPX_HAVE_MPI
#include "dist/mpi_session.hpp"
#endif

namespace {

std::string hex(const std::vector<uint8_t>& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string text;
  for (uint8_t b : bytes) {
    text += digits[b >> 4];
    text += digits[b & 15];
  }
  return text.empty() ? "-" : text;
}

std::vector<uint8_t> random_bytes(size_t count) {
  std::random_device device;
  std::vector<uint8_t> bytes(count);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(device());
  if (count > 2) bytes[0] = 0, bytes[1] = 0xFF;  // a zero and an 0xFF byte always travel
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ddpx;
  try {
    if (argc > 1 && std::string(argv[1]) == "free-port") {
      std::printf("%d\n", find_free_port("127.0.0.1"));
      return 0;
    }
    std::chrono::milliseconds timeout = std::chrono::seconds(60);
    int absent_rank = -1, fail_once_rank = -1;
    for (int i = 1; i + 1 < argc; i += 2) {
      const std::string flag = argv[i];
      if (flag == "--timeout") timeout = std::chrono::milliseconds(static_cast<int64_t>(std::atof(argv[i + 1]) * 1000));
      else if (flag == "--absent-rank") absent_rank = std::atoi(argv[i + 1]);
      else if (flag == "--fail-once-rank") fail_once_rank = std::atoi(argv[i + 1]);
      else fail("exchange_driver: unknown option {}", flag);
    }
    const char* restart_count = std::getenv("TORCHELASTIC_RESTART_COUNT");
    const int attempt = restart_count ? std::atoi(restart_count) : 0;
    const WorldInfo world = detect_world();
#ifdef DDPX_HAVE_MPI
    std::unique_ptr<MpiSession> mpi;  // as train brings it up for NCCL: under mpirun or srun --mpi=pmix
    if (needs_mpi_session("nccl", world)) mpi = std::make_unique<MpiSession>();
#endif
    const ExchangeRoute route = exchange_route(world);
    if (world.rank == absent_rank) {
      std::printf("exchange_driver(%d): rank %d of %d absent on purpose\n", attempt, world.rank, world.world_size);
      return 0;
    }
    std::printf("exchange_driver(%d): rank %d of %d route=%s local=%d\n", attempt, world.rank, world.world_size,
                std::string(route_name(route)).c_str(), world.local_rank);
    std::vector<uint8_t> payload = world.rank == 0 ? random_bytes(128) : std::vector<uint8_t>(128, 0xEE);
    if (world.rank == 0) std::printf("exchange_driver(%d): rank 0 sent %s\n", attempt, hex(payload).c_str());
    std::fflush(stdout);
    if (fail_once_rank >= 0 && attempt > 0 && world.rank == 0) std::this_thread::sleep_for(std::chrono::seconds(1));
    std::vector<uint8_t> got = broadcast_from_rank0(world, "NCCL unique id", payload, timeout);
    std::printf("exchange_driver(%d): rank %d got %s\n", attempt, world.rank, hex(got).c_str());
    std::fflush(stdout);

    if (route == ExchangeRoute::torchrun_store || route == ExchangeRoute::single_process) {
      std::vector<uint8_t> mine = random_bytes(static_cast<size_t>(1 + (world.rank * 13) % 40));
      std::printf("exchange_driver(%d): rank %d contributed %s\n", attempt, world.rank, hex(mine).c_str());
      std::vector<std::vector<uint8_t>> all = allgather_bytes(world, "test all-gather", mine, timeout);
      std::string joined;
      for (size_t r = 0; r < all.size(); ++r) joined += (r ? "," : "") + hex(all[r]);
      std::printf("exchange_driver(%d): rank %d gathered %s\n", attempt, world.rank, joined.c_str());
      std::fflush(stdout);
      if (static_cast<int>(all.size()) != world.world_size || all[static_cast<size_t>(world.rank)] != mine) {
        std::fprintf(stderr, "exchange_driver(%d): rank %d: the all-gather lost this rank's own bytes\n", attempt,
                     world.rank);
        return 1;
      }
    }
    if (world.rank == fail_once_rank && attempt == 0) {
      std::fprintf(stderr, "exchange_driver(%d): rank %d failing on purpose in attempt 0\n", attempt, world.rank);
      return 3;
    }
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "ddpx: error: %s\n", e.what());
    return 2;
  }
}
