// MpiSession: owns MPI's initialization for a process that uses the MPI backend (or MPI to bootstrap NCCL).
// Guarantees: MPI is initialized with MPI_THREAD_MULTIPLE requested and at least MPI_THREAD_SERIALIZED granted
// (the CPU reducer runs collectives on its communication thread, the watchdog may call MPI_Abort from its own);
// MPI_Finalize runs when the session that initialized MPI is destroyed, never twice, except while an exception
// unwinds through it: MPI_Finalize waits for every rank, and the others are typically waiting for this one in a
// collective, so the failing rank would hang until a peer's watchdog killed it, its error unprinted. Skipping it,
// the rank exits with its error and mpirun ends the job. If MPI was already initialized by someone else (a test
// main), the session neither re-initializes nor finalizes it. With set_finalize_timeout(T), MPI_Finalize (which
// waits for every rank) is bounded too: if it has not returned T after it began, the rank prints
// "ddpx: error: rank 1: MPI_Finalize did not return within 3 s (--comm-timeout; collective #11): rank 0's process
// 4242 is stopped ..." (see heartbeat.hpp) and ends with std::_Exit(3), and mpirun ends the job. Built with Open
// MPI, a process that only a PMI-2 launcher started (srun --mpi=pmi2: PMI_FD and PMI_RANK, no PMIX_RANK) is refused
// with that advice before MPI_Init, which would abort there.
#pragma once
#include <chrono>
#include <string>

namespace ddpx {

class HeartbeatBoard;

class MpiSession {
 public:
  MpiSession();  // throws ddpx::Error when MPI lacks the thread support above
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  static bool initialized();  // MPI_Init done and MPI_Finalize not yet
  static int world_rank();
  static int world_size();
  // MPI_Get_library_version's text, first line only ("Open MPI v4.1.6, package: ...").
  static std::string library_version();
  // board (optional, must outlive the session): MPI_Finalize counts as a collective on it, and the timeout's
  // message says what it knows about the other ranks.
  void set_finalize_timeout(std::chrono::milliseconds timeout, HeartbeatBoard* board = nullptr) {
    finalize_timeout_ = timeout;
    finalize_board_ = board;
  }

 private:
  bool owns_ = false;
  int exceptions_at_start_ = 0;  // std::uncaught_exceptions() at construction
  std::chrono::milliseconds finalize_timeout_{0};  // 0: unbounded
  HeartbeatBoard* finalize_board_ = nullptr;
};

// Throws ddpx::Error (naming the granted level) unless MPI runs with at least MPI_THREAD_SERIALIZED.
void require_mpi_thread_support();

}  // namespace ddpx
