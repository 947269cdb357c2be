// MpiSession: owns MPI's initialization for a process that uses the MPI backend (or MPI to bootstrap NCCL).
// Guarantees: MPI is initialized with MPI_THREAD_MULTIPLE requested and at least MPI_THREAD_SERIALIZED granted
// (the CPU reducer runs collectives on its communication thread, the watchdog may call MPI_Abort from its own);
// MPI_Finalize runs when the session that initialized MPI is destroyed, never twice, except while an exception
// unwinds through it: MPI_Finalize waits for every rank, and the others are typically waiting for this one in a
// collective, so the failing rank would hang until a peer's watchdog killed it, its error unprinted. Skipping it,
// the rank exits with its error and mpirun ends the job. If MPI was already initialized by someone else (a test
// main), the session neither re-initializes nor finalizes it. Built with Open MPI, a process that only a PMI-2
// launcher started (srun --mpi=pmi2: PMI_FD and PMI_RANK, no PMIX_RANK) is refused with that advice before
// MPI_Init, which would abort there.
#pragma once

namespace ddpx {

class MpiSession {
 public:
  MpiSession();  // throws ddpx::Error when MPI lacks the thread support above
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  static bool initialized();  // MPI_Init done and MPI_Finalize not yet
  static int world_rank();
  static int world_size();

 private:
  bool owns_ = false;
  int exceptions_at_start_ = 0;  // std::uncaught_exceptions() at construction
};

// Throws ddpx::Error (naming the granted level) unless MPI runs with at least MPI_THREAD_SERIALIZED.
void require_mpi_thread_support();

}  // namespace ddpx
