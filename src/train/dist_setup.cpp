// Distributed set-up for the trainer; see dist_setup.hpp.
#include "train/dist_setup.hpp"

#include <fmt/format.h>

#include <chrono>

#include "core/error.hpp"
#include "ddp/bucket_plan.hpp"
#include "ddp/comm_hook.hpp"
#include "ddp/reducer.hpp"
#include "dist/agreement.hpp"
#include "dist/bootstrap.hpp"
#include "dist/communicator.hpp"
#include "dist/mpi_session.hpp"
#include "dist/watchdog.hpp"
#include "train/step_engine.hpp"
#ifdef DDPX_HAVE_CUDA
#include <cuda_runtime.h>

#include "core/cuda_check.hpp"
#endif

namespace ddpx {

void DistContext::reducer_begin(bool sync, void* compute_stream) { reducer->begin_step(sync, compute_stream); }
void DistContext::reducer_mark_ready(size_t begin, size_t end) { reducer->mark_ready(begin, end); }
void DistContext::reducer_finish() {
  reducer->finish_step();
  if (watchdog) watchdog->throw_if_fired();
}

std::string DistContext::describe() const {
  if (!reducer) return "single process";
  return fmt::format("{}, {} rank(s), {} bucket(s), hook {}{}", communicator->backend_name(), world,
                     reducer->plan().size(), reducer->hook().name(), overlap ? ", overlapped with backward" : ", after backward");
}

DistContext setup_distributed(const TrainOptions& options, const ParamLayout& layout) {
  (void)layout;
  DistContext dist;
  const WorldInfo world = detect_world();
  dist.rank = world.rank;
  dist.world = world.world_size;
  dist.local_rank = world.local_rank;
  dist.local_world = world.local_world_size;
  dist.launcher = world.launcher;
  if (world.world_size == 1 && !options.ddp) return dist;
  const std::string backend = resolve_backend(options.backend, options.device);
#ifdef DDPX_HAVE_CUDA
  if (options.device == "cuda") {
    int count = 0;
    DDPX_REQUIRE(cudaGetDeviceCount(&count) == cudaSuccess && count > world.local_rank,
                 "rank {} (local rank {}) needs GPU {}, but {} GPU(s) are visible; start at most one rank per GPU",
                 world.rank, world.local_rank, world.local_rank, count);
    DDPX_CUDA_CHECK(cudaSetDevice(world.local_rank));
  }
#endif
  if (backend == "mpi") dist.mpi_session = std::make_shared<MpiSession>();
  const auto comm_timeout = std::chrono::milliseconds(static_cast<int64_t>(options.comm_timeout_s * 1000));
  dist.communicator = make_communicator(backend, world, std::chrono::seconds(120), comm_timeout);
  return dist;
}

void broadcast_initial_parameters(DistContext& dist, const TrainOptions& options, const ParamLayout& layout,
                                  float* host_params) {
  Communicator& comm = *dist.communicator;
  // Every rank must run the same step; a disagreement is an error on every rank, never a hang.
  require_agreement(comm, "--model", layout.config().spec());
  require_agreement(comm, "--device/--precision", options.device + "/" + options.precision);
  require_agreement(comm, "--batch", std::to_string(options.batch));
  require_agreement(comm, "--grad-accum", std::to_string(options.grad_accum));
  require_agreement(comm, "--optimizer", options.optimizer);
  if (comm.buffer_memory() == BufferMemory::host) {
    broadcast_parameters(comm, host_params, layout.buffer_size(), nullptr);
    return;
  }
#ifdef DDPX_HAVE_CUDA
  float* device = nullptr;
  DDPX_CUDA_CHECK(cudaMalloc(&device, layout.buffer_size() * sizeof(float)));
  DDPX_CUDA_CHECK(cudaMemcpy(device, host_params, layout.buffer_size() * sizeof(float), cudaMemcpyHostToDevice));
  broadcast_parameters(comm, device, layout.buffer_size(), nullptr);
  DDPX_CUDA_CHECK(cudaDeviceSynchronize());
  DDPX_CUDA_CHECK(cudaMemcpy(host_params, device, layout.buffer_size() * sizeof(float), cudaMemcpyDeviceToHost));
  DDPX_CUDA_CHECK(cudaFree(device));
#else
  fail("internal: a device communicator in a build without CUDA");
#endif
}

void attach_reducer(DistContext& dist, const TrainOptions& options, const ParamLayout& layout, StepEngine& engine) {
  std::vector<GradTensor> tensors;
  for (const auto& t : layout.tensors()) tensors.push_back(GradTensor{t.name, t.offset, t.numel, t.shape});
  BucketPlanOptions plan_options;
  plan_options.cap_bytes = static_cast<size_t>(options.bucket_mb * 1024 * 1024);
  plan_options.first_bucket_cap_bytes = static_cast<size_t>(options.first_bucket_mb * 1024 * 1024);
  BucketPlan plan(tensors, plan_options);
  std::string hook_spec = options.comm_hook;
  if (hook_spec.rfind("powersgd:", 0) == 0 && hook_spec.find(':', 9) == std::string::npos)
    hook_spec += fmt::format(":{}", options.powersgd_start);
  std::unique_ptr<CommHook> hook = make_comm_hook(hook_spec);

  Communicator& comm = *dist.communicator;
  require_agreement(comm, "--comm-hook", hook_spec);
  require_agreement(comm, "the bucket plan (--bucket-mb/--first-bucket-mb)", plan.signature());
  require_agreement(comm, "--no-overlap", options.no_overlap ? "set" : "not set");

  dist.watchdog = std::make_shared<CommWatchdog>(
      comm, std::chrono::milliseconds(static_cast<int64_t>(options.comm_timeout_s * 1000)));
  ReducerOptions reducer_options;
  reducer_options.overlap = !options.no_overlap;
  reducer_options.device = engine.is_cuda() ? GradDevice::cuda : GradDevice::cpu;
  reducer_options.watchdog = dist.watchdog.get();
  dist.overlap = reducer_options.overlap;
  dist.reducer = std::make_shared<Reducer>(comm, engine.grad_buffer(), layout.buffer_size(), tensors, std::move(plan),
                                           std::move(hook), reducer_options);
}

}  // namespace ddpx
