// MpiSession: owns MPI's initialization for a process that uses the MPI backend (or MPI to bootstrap NCCL).
// Guarantees: MPI is initialized with MPI_THREAD_MULTIPLE requested and at least MPI_THREAD_SERIALIZED granted
// (the CPU reducer runs collectives on its communication thread, the watchdog may call MPI_Abort from its own);
// MPI_Finalize runs when the session that initialized MPI is destroyed, never twice. If MPI was already
// initialized by someone else (a test main), the session neither re-initializes nor finalizes it.
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
};

// Throws ddpx::Error (naming the granted level) unless MPI runs with at least MPI_THREAD_SERIALIZED.
void require_mpi_thread_support();

}  // namespace ddpx
