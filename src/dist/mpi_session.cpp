// MpiSession: MPI initialization with thread support and single finalization.
#include "dist/mpi_session.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include <mpi.h>

#include "core/error.hpp"
#include "core/exit_status.hpp"
#include "core/test_fault.hpp"
#include "dist/heartbeat.hpp"

namespace ddpx {

bool MpiSession::initialized() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

int MpiSession::world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int MpiSession::world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

std::string MpiSession::library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  if (MPI_Get_library_version(text, &length) != MPI_SUCCESS) return "MPI (version unknown)";
  std::string out(text, static_cast<size_t>(std::max(0, length)));
  out = out.substr(0, out.find_first_of("\r\n"));
  while (!out.empty() && (out.back() == ' ' || out.back() == '\0')) out.pop_back();
  return out;
}

void require_mpi_thread_support() {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  DDPX_REQUIRE(provided >= MPI_THREAD_SERIALIZED,
               "MPI was initialized with thread level {} but ddpx needs MPI_THREAD_SERIALIZED ({}) or higher: "
               "initialize it with MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...) or let ddpx::MpiSession do it",
               provided, MPI_THREAD_SERIALIZED);
}

MpiSession::MpiSession() : exceptions_at_start_(std::uncaught_exceptions()) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  DDPX_REQUIRE(!finalized, "MPI was already finalized in this process; it cannot be started again");
  if (!initialized()) {
#ifdef OPEN_MPI
    // srun --mpi=pmi2 sets PMI-2's variables only; Open MPI (without Slurm's PMI-2 library) aborts in MPI_Init.
    const bool pmi2_only = std::getenv("PMI_FD") && std::getenv("PMI_RANK") && !std::getenv("PMIX_RANK") &&
                           !std::getenv("OMPI_COMM_WORLD_SIZE");
    DDPX_REQUIRE(!pmi2_only, "this process was started by a PMI-2 launcher (PMI_RANK={}, PMI_FD set, no PMIX_RANK; "
                 "e.g. srun --mpi=pmi2), which this ddpx's Open MPI cannot join: use srun --mpi=pmix or mpirun",
                 std::getenv("PMI_RANK"));
#endif
    int provided = MPI_THREAD_SINGLE;
    int status = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    DDPX_REQUIRE(status == MPI_SUCCESS, "MPI_Init_thread failed with code {}", status);
    owns_ = true;
  }
  require_mpi_thread_support();
}

MpiSession::~MpiSession() {
  if (std::uncaught_exceptions() > exceptions_at_start_) return;  // unwinding on an error: see the header
  if (!owns_ || !initialized()) return;
  test_fault_point("finalize");  // a test hook: see core/test_fault.hpp
  if (finalize_board_) finalize_board_->enter("MPI_Finalize");
  if (finalize_timeout_.count() <= 0) {
    MPI_Finalize();
    return;
  }
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  const int rank = world_rank();
  std::thread bound([&] {
    std::unique_lock lock(mutex);
    if (finished.wait_for(lock, finalize_timeout_, [&] { return done; })) return;
    std::string peers = "a peer rank stopped or hangs at the end of the run";
    if (finalize_board_) {
      finalize_board_->mark_timed_out();
      peers = finalize_board_->describe_peers();
    }
    const std::string line = fmt::format("ddpx: error: rank {}: MPI_Finalize did not return within {:g} s "
                                         "(--comm-timeout; collective #{}): {}\n", rank,
                                         finalize_timeout_.count() / 1000.0,
                                         finalize_board_ ? finalize_board_->entered() : 0, peers);
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
    std::_Exit(exit_status::comm_timeout);
  });
  MPI_Finalize();
  {
    std::lock_guard lock(mutex);
    done = true;
  }
  finished.notify_all();
  bound.join();
}

}  // namespace ddpx
