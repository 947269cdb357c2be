// Distributed set-up for the trainer; see dist_setup.hpp.
#include "train/dist_setup.hpp"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <vector>

#include "comm_plan/bucket_plan.hpp"
#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "core/test_fault.hpp"
#include "ddp/comm_hook_factory.hpp"
#include "ddp/reducer.hpp"
#include "dist/agreement.hpp"
#include "dist/backend_registry.hpp"
#include "dist/bootstrap.hpp"
#include "dist/bootstrap_exchange.hpp"
#include "dist/communicator.hpp"
#include "dist/gather_strings.hpp"
#include "dist/gpu_selection.hpp"
#include "dist/heartbeat.hpp"
#include "dist/host_collectives.hpp"
#include "dist/mpi_session.hpp"
#include "dist/watchdog.hpp"
#include "train/step_engine.hpp"

namespace ddpx {

std::string DistContext::describe() const {
  if (!reducer) return "single process";
  return fmt::format("{}, {} rank(s), {} bucket(s), hook {}{}", communicator->backend_name(), world,
                     reducer->plan().size(), reducer->hook().name(), overlap ? ", overlapped with backward" : ", after backward");
}

namespace {

std::vector<GradTensor> grad_tensors_of(const FlatLayout& layout) {
  std::vector<GradTensor> tensors;
  for (const auto& t : layout.tensors()) tensors.push_back(GradTensor{t.name, t.offset, t.numel, t.shape});
  return tensors;
}

BucketPlan bucket_plan_of(const DistOptions& options, const std::vector<GradTensor>& tensors) {
  return BucketPlan(tensors, BucketPlanOptions::from_mb(options.bucket_mb, options.first_bucket_mb));
}

}  // namespace

DistOptions dist_options(const TrainOptions& options) {
  return {.device = options.device,
          .ddp = options.ddp,
          .backend = options.backend,
          .ranks_per_gpu = options.ranks_per_gpu,
          .comm_hook = options.comm_hook,
          .bucket_mb = options.bucket_mb,
          .first_bucket_mb = options.first_bucket_mb,
          .overlap = !options.no_overlap,
          .comm_timeout_s = options.comm_timeout_s};
}

DistContext setup_distributed(const DistOptions& options) {
  DistContext dist;
  WorldInfo world = detect_world();
  world.ranks_per_gpu = options.ranks_per_gpu;
  dist.rank = world.rank;
  dist.world = world.world_size;
  dist.local_rank = world.local_rank;
  dist.local_world = world.local_world_size;
  dist.launcher = launcher_name(world.launcher);
#ifdef DDPX_HAVE_CUDA
  if (options.device == Device::cuda) dist.cuda_device = bind_cuda_device(world);  // also one rank: a bound GPU
#endif
  if (world.world_size == 1 && !options.ddp) return dist;
  const BackendEntry& backend = resolve_backend(options.backend, options.device);
  // A backend that cannot join processes torchrun started (MPI: each would be an MPI world of its own) is
  // refused before MPI starts, naming the launchers that work (the registry entry's torchrun_refusal).
  require_joins_torchrun(backend, world, started_by_torchrun());
  // Watched from the first collective on (communicator creation waits for every rank: MPI_Init's exchange, the
  // NCCL id's rendezvous, ncclCommInitRank): a rank that never arrives ends the job after --comm-timeout.
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(options.comm_timeout_s * 1000));
  dist.heartbeat = std::make_shared<HeartbeatBoard>(
      world.world_size > 1 ? HeartbeatBoard::job_directory() : std::filesystem::path(), world.rank,
      world.world_size);
  dist.watchdog = std::make_shared<CommWatchdog>(world.rank, timeout, dist.heartbeat.get());
  test_fault_point("start");
  dist.watchdog->run_watched("communicator creation (" + std::string(backend.name) + ")", [&] {
    // Under mpirun or `srun --mpi=pmix` MPI comes up for every backend: the NCCL id then goes over MPI_Bcast.
    if (needs_mpi_session(backend, world)) {
      dist.mpi_session = std::make_shared<MpiSession>();
      dist.mpi_session->set_finalize_timeout(timeout, dist.heartbeat.get());
    }
    dist.communicator = make_communicator(backend, world, timeout, timeout);
  });
  dist.watchdog->attach(*dist.communicator);
  return dist;
}

RunSettings describe_run(const TrainOptions& options, const FlatLayout& layout, int64_t start_step,
                         const DistContext& dist, std::vector<int64_t> attempt_starts) {
  RunFacts facts;
  facts.start_step = start_step;
  facts.attempt_starts = std::move(attempt_starts);
  facts.hook_spec = options.comm_hook.text();
  facts.bucket_plan_signature = bucket_plan_of(dist_options(options), grad_tensors_of(layout)).signature();
  facts.world = dist.world;
  facts.backend = dist.communicator ? dist.communicator->backend_name() : "";
  facts.reducer = dist.communicator != nullptr;  // attach_reducer attaches one exactly when there is a communicator
  return RunSettings(options, layout, facts);
}

void broadcast_initial_parameters(DistContext& dist, const RunSettings& settings, const FlatLayout& layout,
                                  float* host_params) {
  Communicator& comm = *dist.communicator;
  // Every rank must run the same steps; a disagreement is an error on every rank, never a hang. One table, one
  // collective: the broadcast's size depends on the model, so it must not start before this check.
  const std::vector<AgreedSetting> agreed = settings.agreed();
  test_fault_point("agreement");
  dist.watchdog->run_watched("the start-up agreement", [&] { require_agreement(comm, agreed); });
  test_fault_point("broadcast");
  // Host bytes for any backend: dist/host_collectives stages them through device memory for NCCL (the one
  // staging path). A hung broadcast returns from its device sync once the watchdog aborts the communicator.
  dist.watchdog->run_watched("the broadcast of rank 0's parameters", [&] {
    broadcast_host(comm, host_params, layout.buffer_size() * sizeof(float), 0);
  });
}

std::vector<std::string> DistContext::gather_strings(const std::string& mine) const {
  std::vector<std::string> all;
  watchdog->run_watched("the run report's gather", [&] { all = ddpx::gather_strings(*communicator, mine); });
  return all;
}

std::unique_ptr<ReducerPort> attach_reducer(DistContext& dist, const DistOptions& options, const FlatLayout& layout,
                                            StepEngine& engine, bool span_updates) {
  // Note [Optimizer overlapped with backward] (train/step_engine.hpp): each span is updated once reduced.
  if (!dist.communicator) return make_no_reducer_port(engine, span_updates);
  // The hook and the bucket plan were agreed on by broadcast_initial_parameters().
  std::vector<GradTensor> tensors = grad_tensors_of(layout);
  BucketPlan plan = bucket_plan_of(options, tensors);
  std::unique_ptr<CommHook> hook = make_comm_hook(options.comm_hook);
  Communicator& comm = *dist.communicator;
  ReducerOptions reducer_options;
  reducer_options.overlap = options.overlap;
  reducer_options.device = engine.is_cuda() ? GradDevice::cuda : GradDevice::cpu;
  reducer_options.watchdog = dist.watchdog.get();
  if (span_updates)
    reducer_options.after_reduce = [&engine](size_t begin, size_t end, void* stream, const ReducedGradients* wire) {
      engine.optimizer_span(begin, end, stream, wire);
    };
  dist.overlap = reducer_options.overlap;
  dist.reducer = std::make_shared<Reducer>(comm, engine.grad_buffer(), layout.buffer_size(), tensors, std::move(plan),
                                           std::move(hook), reducer_options);
  return make_reducer_port(*dist.reducer, layout.buffer_size(), dist.watchdog.get());
}

AbortCommunicatorOnError::~AbortCommunicatorOnError() {
  if (std::uncaught_exceptions() > exceptions_ && dist_.communicator &&
      dist_.communicator->buffer_memory() == BufferMemory::cuda)
    dist_.communicator->abort("this rank is exiting on an error");
}

}  // namespace ddpx
