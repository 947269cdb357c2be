// Distributed set-up for the trainer; see dist_setup.hpp.
#include "train/dist_setup.hpp"

#include <fmt/format.h>

#include <chrono>
#include <vector>

#include "comm_plan/bucket_plan.hpp"
#include "core/error.hpp"
#include "core/test_fault.hpp"
#include "ddp/comm_hook_factory.hpp"
#include "ddp/reducer.hpp"
#include "dist/communicator.hpp"
#include "dist/watchdog.hpp"
#include "train/step_engine.hpp"

namespace ddpx {

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

DistJobOptions dist_job_options(const DistOptions& options) {
  return {.backend = options.backend,
          .device = options.device,
          .ranks_per_gpu = options.ranks_per_gpu,
          .comm_timeout = std::chrono::milliseconds(static_cast<int64_t>(options.comm_timeout_s * 1000)),
          .backend_when_alone = options.ddp,
          .bind_gpu = true};
}

RunSettings describe_run(const TrainOptions& options, const FlatLayout& layout, int64_t start_step,
                         const DistJob& job, std::vector<int64_t> attempt_starts) {
  RunFacts facts;
  facts.start_step = start_step;
  facts.attempt_starts = std::move(attempt_starts);
  facts.hook_spec = options.comm_hook.text();
  facts.bucket_plan_signature = bucket_plan_of(dist_options(options), grad_tensors_of(layout)).signature();
  facts.world = job.world();
  // A lone process's self communicator is no backend of the run's: the report says "" and no reducer.
  facts.backend = job.data_parallel() ? job.communicator().backend_name() : "";
  facts.reducer = job.data_parallel();  // attach_reducer attaches one exactly then
  return RunSettings(options, layout, facts);
}

void broadcast_initial_parameters(DistJob& job, const RunSettings& settings, const FlatLayout& layout,
                                  float* host_params) {
  // Every rank must run the same steps; a disagreement is an error on every rank, never a hang. One table, one
  // collective: the broadcast's size depends on the model, so it must not start before this check.
  const std::vector<AgreedSetting> agreed = settings.agreed();
  test_fault_point("agreement");
  job.agree(agreed);
  test_fault_point("broadcast");
  job.broadcast_from_rank0(host_params, layout.buffer_size() * sizeof(float), "the broadcast of rank 0's parameters");
}

std::unique_ptr<ReducerPort> attach_reducer(DistJob& job, const DistOptions& options, const FlatLayout& layout,
                                            StepEngine& engine, bool span_updates) {
  // Note [Optimizer overlapped with backward] (train/step_engine.hpp): each span is updated once reduced.
  if (!job.data_parallel()) return make_no_reducer_port(engine, span_updates);
  // The hook and the bucket plan were agreed on by broadcast_initial_parameters().
  std::vector<GradTensor> tensors = grad_tensors_of(layout);
  BucketPlan plan = bucket_plan_of(options, tensors);
  std::unique_ptr<CommHook> hook = make_comm_hook(options.comm_hook);
  ReducerOptions reducer_options;
  reducer_options.overlap = options.overlap;
  reducer_options.device = engine.is_cuda() ? GradDevice::cuda : GradDevice::cpu;
  reducer_options.watchdog = job.watchdog();
  if (span_updates)
    reducer_options.after_reduce = [&engine](size_t begin, size_t end, void* stream, const ReducedGradients* wire) {
      engine.optimizer_span(begin, end, stream, wire);
    };
  auto reducer = std::make_unique<Reducer>(job.communicator(), engine.grad_buffer(), layout.buffer_size(), tensors,
                                           std::move(plan), std::move(hook), reducer_options);
  // "NCCL, 2 rank(s), 13 bucket(s), hook bf16, overlapped with backward" (the start-up line's DDP part).
  std::string description = fmt::format("{}, {} rank(s), {} bucket(s), hook {}{}", job.communicator().backend_name(),
                                        job.world(), reducer->plan().size(), reducer->hook().name(),
                                        options.overlap ? ", overlapped with backward" : ", after backward");
  return make_reducer_port(std::move(reducer), layout.buffer_size(), job.watchdog(), std::move(description));
}

AbortCommunicatorOnError::~AbortCommunicatorOnError() {
  if (std::uncaught_exceptions() > exceptions_ && job_.communicator().buffer_memory() == BufferMemory::cuda)
    job_.communicator().abort("this rank is exiting on an error");
}

}  // namespace ddpx
