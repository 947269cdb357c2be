// bootstrap_exchange_driver: the start of `ddpx train --device cuda` without a GPU. It reads the job from the
// environment, brings up MPI when train would (needs_mpi_session for the nccl backend), and sends rank 0's
// 128-byte stand-in for the NCCL unique id through share_from_rank0(), the function share_nccl_id() uses. Rank 0's
// bytes come from its pid and the clock, so no other rank can guess them. Every rank prints one line
//   exchange: rank R of N via VIA payload HEX
// (HEX: the first 16 bytes). With an argument (MPI or "TCP rendezvous") it exits 3 unless the bytes went that way.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "dist/bootstrap.hpp"
#ifdef DDPX_HAVE_MPI
#include "dist/mpi_session.hpp"
#endif

int main(int argc, char** argv) {
  using namespace ddpx;
  try {
    const WorldInfo world = detect_world();
#ifdef DDPX_HAVE_MPI
    std::unique_ptr<MpiSession> mpi;
    if (needs_mpi_session("nccl", world)) mpi = std::make_unique<MpiSession>();
#endif
    std::vector<uint8_t> payload(128, 0);
    if (world.rank == 0) {
      std::mt19937_64 random(static_cast<uint64_t>(::getpid()) ^
                             static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
      for (uint8_t& byte : payload) byte = static_cast<uint8_t>(random());
    }
    std::string via;
    const std::vector<uint8_t> received = share_from_rank0(world, payload, std::chrono::seconds(60), &via);
    std::string hex;
    for (size_t i = 0; i < 16 && i < received.size(); ++i) {
      char digits[3];
      std::snprintf(digits, sizeof digits, "%02x", received[i]);
      hex += digits;
    }
    std::printf("exchange: rank %d of %d via %s payload %s (%zu bytes)\n", world.rank, world.world_size, via.c_str(),
                hex.c_str(), received.size());
    std::fflush(stdout);
    if (argc > 1 && via != argv[1]) {
      std::fprintf(stderr, "rank %d: the payload went via %s, not %s\n", world.rank, via.c_str(), argv[1]);
      return 3;
    }
    return received.size() == 128 ? 0 : 4;
  } catch (const Error& e) {
    std::fprintf(stderr, "bootstrap_exchange_driver: %s\n", e.what());
    return 2;
  }
}
