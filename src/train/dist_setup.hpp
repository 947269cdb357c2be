// The trainer's distributed set-up over dist/job.hpp's DistJob (the process's place in the job, opened once from
// dist_job_options()): the job's options from the flags, the run's settings table, the start-up agreement and the
// parameter broadcast, and the reducer the loop reduces gradients through. Without a launcher/MPI/torchrun
// environment and without --ddp, the job is a single process over the self communicator and the run attaches no
// reducer (plain training, no DDP overhead at all): DistJob::data_parallel() is that decision, taken once.
#pragma once
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "dist/job.hpp"
#include "model/flat_layout.hpp"
#include "train/reducer_port.hpp"
#include "train/run_settings.hpp"
#include "train/train_options.hpp"

namespace ddpx {

class StepEngine;

// What the distributed set-up reads of a run: the data-parallel part of TrainOptions (dist_options() fills it).
struct DistOptions {
  Device device = Device::cpu;
  bool ddp = false;  // the reducer even with one rank
  BackendChoice backend;  // auto until the job resolves it
  int ranks_per_gpu = 0;
  CommHookSpec comm_hook;
  double bucket_mb = 25.0, first_bucket_mb = 1.0;
  bool overlap = true;  // buckets reduced during backward (not --no-overlap)
  double comm_timeout_s = 300;
};
DistOptions dist_options(const TrainOptions& options);

// The options of the run's job (dist/job.hpp): --backend, --device (this rank's GPU bound even alone),
// --ranks-per-gpu, --comm-timeout; --ddp connects a world of one through its backend.
DistJobOptions dist_job_options(const DistOptions& options);
// The table of the run's settings (train/run_settings.hpp) for this job: the hook and the bucket plan of the
// options over the layout, the ranks, the communicator's backend, whether a reducer is attached, and the start
// steps of the run's attempts (RunFacts::attempt_starts).
RunSettings describe_run(const TrainOptions& options, const FlatLayout& layout, int64_t start_step,
                         const DistJob& job, std::vector<int64_t> attempt_starts = {0});
// Rank 0's parameters overwrite everyone's (host buffer), after checking in one collective that all ranks agree
// on the table's agreed rows (model, optimizer, steps, the step this run starts at, data, hook, bucket plan,
// outputs...; the broadcast's size depends on the model: it must not start before that check); disagreement is an
// error on every rank naming the setting and both values. Both collectives are watched (alone: the agreement is
// trivially met and nothing is broadcast).
void broadcast_initial_parameters(DistJob& job, const RunSettings& settings, const FlatLayout& layout,
                                  float* host_params);
// The port the training loop reduces gradients through (train/reducer_port.hpp). A data-parallel job: builds the
// bucket plan and the reducer over the engine's gradient buffer (their settings were agreed on by
// broadcast_initial_parameters), owned by the port; otherwise the port that reduces nothing. span_updates: the
// updates overlap backward (updates_overlap_backward, train/train_options.hpp, the answer the step runner follows
// too), so each span is handed to engine.optimizer_span once reduced (or, without a reducer, once final). The port
// refers to the job and the engine, which must outlive it.
std::unique_ptr<ReducerPort> attach_reducer(DistJob& job, const DistOptions& options, const FlatLayout& layout,
                                            StepEngine& engine, bool span_updates);

// Declared after everything a training loop uses, so that it runs first when an error unwinds from the loop: a
// rank that fails while its own NCCL kernels wait for peers would otherwise block in the teardown that follows
// (pinned frees and the engine synchronize the device) until its watchdog fires. Aborting the communicator
// releases those kernels, the rank exits at once, and the launcher then stops the other workers. (MPI is left
// alone: its abort would end the job before this rank prints its error; MpiSession skips MPI_Finalize while
// unwinding, so the rank exits with its error and mpirun stops the others.)
class AbortCommunicatorOnError {
 public:
  explicit AbortCommunicatorOnError(DistJob& job) : job_(job) {}
  ~AbortCommunicatorOnError();
  AbortCommunicatorOnError(const AbortCommunicatorOnError&) = delete;
  AbortCommunicatorOnError& operator=(const AbortCommunicatorOnError&) = delete;

 private:
  DistJob& job_;
  const int exceptions_ = std::uncaught_exceptions();
};

}  // namespace ddpx
