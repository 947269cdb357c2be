// HeartbeatBoard: a side channel that names the rank(s) a collective is waiting for, without their cooperation.
// Each rank keeps one small record in a per-job directory on its node: its pid, how many collectives it has
// entered and completed, and what the last one was ("the start-up agreement", "step 17"). The owner updates its
// record through a shared memory mapping (two atomic stores and a short copy per collective: no system call).
// When a rank's watchdog fires, describe_peers() reads every other rank's record and the kernel's view of its
// process (/proc/PID/stat), so a stopped (SIGSTOP, state T), dead or lagging rank is named even though it
// cannot answer. Guarantees and limits:
//  - Only ranks on the same node are seen (records are files on the node); ranks elsewhere are reported as
//    having no heartbeat here. A record left by a process that was killed is recognised by its dead pid.
//  - The directory (job_directory()) is, in this order: DDPX_HEARTBEAT_DIR; under Open MPI, a folder in the job's
//    session directory, which mpirun removes when the job ends, even after a kill; under ddpx's launcher
//    (DDPX_JOB_TOKEN), Slurm (SLURM_JOB_ID, SLURM_STEP_ID) or torchrun (TORCHELASTIC_RUN_ID), a folder in the
//    temporary directory named by a hash of those. None of them: the board is disabled and messages fall back to
//    the timing-out rank's own view. The folder is created mode 0700 and refused (board disabled) when it is a
//    symlink or owned by another user.
//  - Every rank removes its record when the board is destroyed, and the folder when it is then empty. A board that
//    starts removes the boards beside it that only processes no longer running left (kill -9 of a whole job), if
//    they are this user's and untouched for a minute (Note [Stale heartbeat boards]).
//  - Culprits are ranks whose process exited, is stopped, or runs outside any collective with a lower count than
//    the firing rank's; ranks blocked in an earlier collective are named as waiting only when no culprit is
//    visible; ranks whose own watchdog fired are never named (they waited too, and may have exited since).
//    Ranks compare counts: every rank enters the same collectives in the same order (the communicator's
//    contract), so a rank whose count is below the firing rank's has not reached the collective. On a CUDA
//    backend the host runs a few steps ahead of the GPU: a difference of one or two steps is not conclusive there.
//  - Thread-safety: enter()/complete() from one thread at a time (the watchdog calls them under its lock);
//    describe_peers() from any thread.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "dist/bootstrap.hpp"

namespace ddpx {

struct HeartbeatRecord;

class HeartbeatBoard {
 public:
  // directory empty: a disabled board (every call is a no-op, describe_peers() returns "").
  HeartbeatBoard(const std::filesystem::path& directory, int rank, int world);
  ~HeartbeatBoard();
  HeartbeatBoard(const HeartbeatBoard&) = delete;
  HeartbeatBoard& operator=(const HeartbeatBoard&) = delete;

  static std::filesystem::path job_directory(const EnvLookup& env = process_environment());

  bool enabled() const { return record_ != nullptr; }
  void enter(std::string_view what);  // a collective starts (numbered from 1)
  void enter_step(int64_t step);      // enter("step <step>") without a heap allocation (the reducer's per-bucket path)
  void complete();                    // the collective entered last has completed
  void mark_timed_out();              // this rank's watchdog fired: peers then do not blame this rank
  uint64_t entered() const;

  // "rank 2 did not reach it: its process 4242 is stopped (state T), last in collective #5 (the start-up
  // agreement)"; ranks that reached it are not named; "" when the board is disabled.
  std::string describe_peers() const;

 private:
  std::filesystem::path record_path(int rank) const;
  std::filesystem::path directory_;
  int rank_ = 0, world_ = 1;
  HeartbeatRecord* record_ = nullptr;  // our own record, mapped shared
};

}  // namespace ddpx
