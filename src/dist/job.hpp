// DistJob: this process's place in a distributed job, opened once: the world (rank, world size, local ranks, the
// launcher), the heartbeat record, the watchdog, the MPI session, the communicator and the run clock. `ddpx train`,
// `ddpx eval`, `ddpx allreduce` and the LibTorch adapter (torch_ddp) each open one; nothing else builds these parts
// (the seam of c10d's ProcessGroup and Megatron's parallel_state). See docs/design.md, "The job's lifetime".
// Guarantees:
//  - The world is read once, from the launcher's environment (dist/bootstrap.hpp); no one re-reads it.
//  - The communicator is always there: a world of one talks through the self backend, unless
//    DistJobOptions::backend_when_alone asks for the requested backend even alone (train's --ddp). Otherwise the
//    backend is dist/backend_registry.hpp's resolve_backend(backend, device); a backend that cannot join ranks
//    torchrun started is refused before MPI starts (require_joins_torchrun).
//  - data_parallel(): whether the ranks exchange gradients, decided here once: several ranks, or one that asked
//    for its backend (backend_when_alone). It is false exactly when the communicator is the lone self one.
//  - Every collective the job runs or offers (communicator creation, the clock measurement, agree(),
//    broadcast_from_rank0(), gather_strings(), run_watched()) is bounded by the watchdog (comm_timeout): a rank
//    that dies, stalls or never arrives ends the job within it with a message naming the rank and the collective
//    (dist/watchdog.hpp, dist/heartbeat.hpp), never a hang. The test fault point "start" (core/test_fault.hpp) is
//    passed before the communicator is created.
//  - The run clock: opening measures this rank's offset to rank 0's steady clock (dist/clock_offset.hpp) and takes
//    rank 0's opening as the run clock's zero; restart_run_clock() moves the zero to rank 0's now (collective).
//    now_ms() and on_run_clock() are times on rank 0's clock since that zero (Note [One clock for all ranks]).
//  - Destruction order (members declared in the reverse order): the watchdog goes first (it may abort the
//    communicator, so it must not outlive it), then the communicator, then MPI (MPI_Finalize after the last
//    communicator call; skipped while an exception unwinds, dist/mpi_session.hpp), then the heartbeat record,
//    which MPI_Finalize still counts as a collective. Whatever a caller builds over the communicator (a Reducer)
//    must be destroyed before the job.
//  - bind_gpu with --device cuda: this rank's GPU is chosen and made current before the communicator exists
//    (dist/gpu_selection.hpp), also for a world of one; cuda_device() says which.
#pragma once
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/device.hpp"
#include "dist/agreement.hpp"
#include "dist/backend_registry.hpp"
#include "dist/bootstrap.hpp"
#include "dist/clock_offset.hpp"
#include "dist/communicator.hpp"

namespace ddpx {

class CommWatchdog;
class HeartbeatBoard;
class MpiSession;

struct DistJobOptions {
  BackendChoice backend;  // auto: resolve_backend's rule for the device
  Device device = Device::cpu;
  int ranks_per_gpu = 0;  // --ranks-per-gpu (0: not given)
  std::chrono::milliseconds comm_timeout{std::chrono::seconds(300)};  // --comm-timeout: every collective's bound
  // A world of one connects through `backend` too (train's --ddp: the reducer's cost measured alone); otherwise
  // it talks through the self backend.
  bool backend_when_alone = false;
  // --device cuda: choose and make current this rank's GPU before the communicator (train, eval). The LibTorch
  // adapter leaves the current device to its caller (the module's).
  bool bind_gpu = false;
};

class DistJob {
 public:
  // Collective (with every rank of the job): reads the world, creates the heartbeat record, the watchdog, MPI
  // where needed and the communicator, and measures the run clock.
  explicit DistJob(const DistJobOptions& options);
  ~DistJob();
  DistJob(const DistJob&) = delete;
  DistJob& operator=(const DistJob&) = delete;

  int rank() const { return world_.rank; }
  int world() const { return world_.world_size; }
  int local_rank() const { return world_.local_rank; }
  int local_world() const { return world_.local_world_size; }  // ranks on this node
  const WorldInfo& world_info() const { return world_; }
  std::string launcher() const { return launcher_name(world_.launcher); }
  bool lead() const { return world_.rank == 0; }
  // Whether the ranks exchange gradients (see the guarantees): several ranks, or --ddp alone.
  bool data_parallel() const { return data_parallel_; }
  // --device cuda with bind_gpu: the GPU bind_cuda_device() chose; else 0.
  int cuda_device() const { return cuda_device_; }
  Communicator& communicator() const { return *communicator_; }
  CommWatchdog& watchdog() const { return *watchdog_; }
  std::chrono::milliseconds comm_timeout() const { return comm_timeout_; }

  // Watched verbs (collective: every rank calls them together, in the same order).
  // The settings' agreement (dist/agreement.hpp): a disagreement is an error on every rank naming the setting.
  void agree(const std::vector<AgreedSetting>& settings, std::string_view what = "the start-up agreement");
  // Rank 0's `bytes` bytes at `data` (host memory) land on every rank; nothing to do alone.
  void broadcast_from_rank0(void* data, size_t bytes, std::string_view what);
  // Every rank's string, on every rank ("what": the collective's name in a timeout's message).
  std::vector<std::string> gather_strings(const std::string& mine,
                                          std::string_view what = "a gather of every rank's text");
  // Any other collective over communicator(), under the watchdog.
  void run_watched(std::string_view what, const std::function<void()>& collective);

  // The run clock (see the guarantees).
  double now_ms() const;                            // now, on the run clock
  double on_run_clock(double steady_ms) const;      // a time of this rank's steady clock (ms), on the run clock
  const ClockOffset& clock_offset() const { return clock_offset_; }  // this rank's offset to rank 0
  void restart_run_clock();                         // collective: the zero becomes rank 0's now

 private:
  WorldInfo world_;
  bool data_parallel_ = false;
  int cuda_device_ = 0;
  std::chrono::milliseconds comm_timeout_;
  ClockOffset clock_offset_;
  double origin_ms_ = 0;  // the run clock's zero: rank 0's steady clock, ms
  // Declaration order is destruction order reversed (see the guarantees).
  std::shared_ptr<HeartbeatBoard> heartbeat_;
  std::shared_ptr<MpiSession> mpi_session_;
  std::unique_ptr<Communicator> communicator_;
  std::unique_ptr<CommWatchdog> watchdog_;
};

// Milliseconds of this process's steady clock (the clock the run clock is measured against).
double steady_clock_ms();

}  // namespace ddpx
