// DistJob: the job opened once; see job.hpp.
#include "dist/job.hpp"

#include <filesystem>

#include "core/test_fault.hpp"
#include "dist/bootstrap_exchange.hpp"
#include "dist/gather_strings.hpp"
#include "dist/gpu_selection.hpp"
#include "dist/heartbeat.hpp"
#include "dist/host_collectives.hpp"
#include "dist/watchdog.hpp"
#ifdef DDPX_HAVE_MPI
#include "dist/mpi_session.hpp"
#endif

namespace ddpx {

double steady_clock_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

namespace {

// A world of one talks through self unless it asked for its backend (see job.hpp).
const BackendEntry& job_backend(const DistJobOptions& options, const WorldInfo& world) {
  if (world.world_size == 1 && !options.backend_when_alone) return backend_named("self");
  return resolve_backend(options.backend, options.device);
}

}  // namespace

DistJob::DistJob(const DistJobOptions& options) : world_(detect_world()), comm_timeout_(options.comm_timeout) {
  world_.ranks_per_gpu = options.ranks_per_gpu;
  data_parallel_ = world_.world_size > 1 || options.backend_when_alone;
#ifdef DDPX_HAVE_CUDA
  if (options.bind_gpu && options.device == Device::cuda) cuda_device_ = bind_cuda_device(world_);
#endif
  const BackendEntry& backend = job_backend(options, world_);
  // A backend that cannot join processes torchrun started (MPI: each would be an MPI world of its own) is refused
  // before MPI starts, naming the launchers that work (the registry entry's torchrun_refusal).
  require_joins_torchrun(backend, world_, started_by_torchrun());
  heartbeat_ = std::make_shared<HeartbeatBoard>(
      world_.world_size > 1 ? HeartbeatBoard::job_directory() : std::filesystem::path(), world_.rank,
      world_.world_size);
  // Watched from the first collective on (communicator creation waits for every rank: MPI_Init's exchange, the
  // NCCL id's rendezvous, ncclCommInitRank): a rank that never arrives ends the job after the timeout.
  watchdog_ = std::make_unique<CommWatchdog>(world_.rank, comm_timeout_, heartbeat_.get());
  test_fault_point("start");
  watchdog_->run_watched("communicator creation (" + std::string(backend.name) + ")", [&] {
#ifdef DDPX_HAVE_MPI
    // Under mpirun or `srun --mpi=pmix` MPI comes up for every backend: the NCCL id then goes over MPI_Bcast.
    if (needs_mpi_session(backend, world_)) {
      mpi_session_ = std::make_shared<MpiSession>();
      mpi_session_->set_finalize_timeout(comm_timeout_, heartbeat_.get());
    }
#endif
    communicator_ = make_communicator(backend, world_, comm_timeout_, comm_timeout_);
  });
  watchdog_->attach(*communicator_);
  // The run clock: every rank's offset to rank 0, and rank 0's opening as its zero.
  watchdog_->run_watched("the clock offset measurement",
                         [&] { clock_offset_ = measure_clock_offset(*communicator_, steady_clock_ms); });
  restart_run_clock();
}

DistJob::~DistJob() = default;

void DistJob::run_watched(std::string_view what, const std::function<void()>& collective) {
  watchdog_->run_watched(what, collective);
}

void DistJob::agree(const std::vector<AgreedSetting>& settings, std::string_view what) {
  run_watched(what, [&] { require_agreement(*communicator_, settings); });
}

void DistJob::broadcast_from_rank0(void* data, size_t bytes, std::string_view what) {
  if (world_.world_size == 1) return;
  // Host bytes for any backend: dist/host_collectives stages them through device memory for NCCL. A hung
  // broadcast returns from its device sync once the watchdog aborts the communicator.
  run_watched(what, [&] { broadcast_host(*communicator_, data, bytes, 0); });
}

std::vector<std::string> DistJob::gather_strings(const std::string& mine, std::string_view what) {
  std::vector<std::string> all;
  run_watched(what, [&] { all = ddpx::gather_strings(*communicator_, mine); });
  return all;
}

double DistJob::on_run_clock(double steady_ms) const { return steady_ms + clock_offset_.offset_ms - origin_ms_; }

double DistJob::now_ms() const { return on_run_clock(steady_clock_ms()); }

void DistJob::restart_run_clock() {
  double origin_ms = steady_clock_ms() + clock_offset_.offset_ms;  // rank 0's: offset 0
  broadcast_from_rank0(&origin_ms, sizeof(origin_ms), "the run clock's start");
  origin_ms_ = origin_ms;
}

}  // namespace ddpx
