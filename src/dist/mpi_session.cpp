// MpiSession: MPI initialization with thread support and single finalization.
#include "dist/mpi_session.hpp"

#include <cstdlib>
#include <exception>

#include <mpi.h>

#include "core/error.hpp"

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
  if (owns_ && initialized()) MPI_Finalize();
}

}  // namespace ddpx
