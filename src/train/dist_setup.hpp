// DistContext: this process's place in the job (rank, world, local rank), its communicator and its gradient
// reducer, set up from the environment and the flags. Without a launcher/MPI/torchrun environment and without
// --ddp, it is a single process with no communicator (plain training, no DDP overhead at all). Which backend,
// whether MPI comes up first, and whether the backend may join torchrun's ranks are dist/backend_registry's.
#pragma once
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "model/flat_layout.hpp"
#include "train/reducer_port.hpp"
#include "train/run_settings.hpp"
#include "train/train_options.hpp"

namespace ddpx {

class StepEngine;
class Communicator;
class Reducer;
class CommWatchdog;
class MpiSession;
class HeartbeatBoard;

struct DistContext {
  // This rank's record of the collectives it entered, read by the peers' watchdogs to name a stalled rank.
  // Declared first: it outlives MPI_Finalize, which is a collective on it too.
  std::shared_ptr<HeartbeatBoard> heartbeat;
  std::shared_ptr<MpiSession> mpi_session;    // MPI_Init/Finalize for the mpi backend (destroyed after the rest)
  int rank = 0, world = 1, local_rank = 0, local_world = 1;  // local_world: ranks on this node
  int cuda_device = 0;  // --device cuda: the GPU bind_cuda_device() chose (dist/gpu_selection.hpp)
  std::shared_ptr<Communicator> communicator;  // null: single process without DDP
  // Bounds every collective (--comm-timeout), from communicator creation on; set whenever communicator is.
  // Declared after the communicator (it aborts it) and before the reducer so that it outlives it: a reducer torn
  // down on an error may still wait for a collective, and that wait stays bounded.
  std::shared_ptr<CommWatchdog> watchdog;
  std::shared_ptr<Reducer> reducer;  // null: no gradient reduction
  std::string launcher = "none";
  bool overlap = true;

  std::string describe() const;
  // Every rank's string on every rank, under the watchdog (needs a communicator).
  std::vector<std::string> gather_strings(const std::string& mine) const;  // "NCCL, 2 ranks, 13 buckets (25 MB), hook bf16, overlap"
};

// What the distributed set-up reads of a run: the data-parallel part of TrainOptions (dist_options() fills it).
struct DistOptions {
  Device device = Device::cpu;
  bool ddp = false;  // the reducer even with one rank
  BackendChoice backend;  // auto until setup_distributed resolves it
  int ranks_per_gpu = 0;
  CommHookSpec comm_hook;
  double bucket_mb = 25.0, first_bucket_mb = 1.0;
  bool overlap = true;  // buckets reduced during backward (not --no-overlap)
  double comm_timeout_s = 300;
};
DistOptions dist_options(const TrainOptions& options);

// Reads rank/world from the environment (launcher, mpirun, srun, torchrun); creates the heartbeat record, the
// watchdog and then, under the watchdog, the communicator when the job has several ranks or --ddp is given.
DistContext setup_distributed(const DistOptions& options);
// The table of the run's settings (train/run_settings.hpp) for this job: the hook and the bucket plan of the
// options over the layout, the ranks, the communicator's backend, whether a reducer is attached, and the start
// steps of the run's attempts (RunFacts::attempt_starts).
RunSettings describe_run(const TrainOptions& options, const FlatLayout& layout, int64_t start_step,
                         const DistContext& dist, std::vector<int64_t> attempt_starts = {0});
// Rank 0's parameters overwrite everyone's (host buffer), after checking in one collective that all ranks agree
// on the table's agreed rows (model, optimizer, steps, the step this run starts at, data, hook, bucket plan,
// outputs...; the broadcast's size depends on the model: it must not start before that check); disagreement is an
// error on every rank naming the setting and both values. Both collectives are watched.
void broadcast_initial_parameters(DistContext& dist, const RunSettings& settings, const FlatLayout& layout,
                                  float* host_params);
// The port the training loop reduces gradients through (train/reducer_port.hpp). With a communicator: builds the
// bucket plan and the reducer over the engine's gradient buffer (their settings were agreed on by
// broadcast_initial_parameters) into dist.reducer, and a port over it; without one, the port that reduces
// nothing. span_updates: the updates overlap backward (updates_overlap_backward, train/train_options.hpp, the
// answer the step runner follows too), so each span is handed to engine.optimizer_span once reduced (or, without a
// reducer, once final). The port refers to dist and engine, which must outlive it.
std::unique_ptr<ReducerPort> attach_reducer(DistContext& dist, const DistOptions& options, const FlatLayout& layout,
                                            StepEngine& engine, bool span_updates);

// Declared after everything a training loop uses, so that it runs first when an error unwinds from the loop: a
// rank that fails while its own NCCL kernels wait for peers would otherwise block in the teardown that follows
// (pinned frees and the engine synchronize the device) until its watchdog fires. Aborting the communicator
// releases those kernels, the rank exits at once, and the launcher then stops the other workers. (MPI is left
// alone: its abort would end the job before this rank prints its error; MpiSession skips MPI_Finalize while
// unwinding, so the rank exits with its error and mpirun stops the others.)
class AbortCommunicatorOnError {
 public:
  explicit AbortCommunicatorOnError(DistContext& dist) : dist_(dist) {}
  ~AbortCommunicatorOnError();
  AbortCommunicatorOnError(const AbortCommunicatorOnError&) = delete;
  AbortCommunicatorOnError& operator=(const AbortCommunicatorOnError&) = delete;

 private:
  DistContext& dist_;
  const int exceptions_ = std::uncaught_exceptions();
};

}  // namespace ddpx
