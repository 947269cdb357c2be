// DistContext: this process's place in the job (rank, world, local rank), its communicator and its gradient
// reducer, set up from the environment and the flags. Without a launcher/MPI/torchrun environment and without
// --ddp, it is a single process with no communicator (plain training, no DDP overhead at all).
#pragma once
#include <memory>
#include <string>

#include "model/param_layout.hpp"
#include "train/train_options.hpp"

namespace ddpx {

class StepEngine;
class Communicator;
class Reducer;
class CommWatchdog;
class MpiSession;

struct DistContext {
  std::shared_ptr<MpiSession> mpi_session;    // MPI_Init/Finalize for the mpi backend (declared first: destroyed last)
  int rank = 0, world = 1, local_rank = 0, local_world = 1;  // local_world: ranks on this node
  int cuda_device = 0;  // --device cuda: the GPU bind_cuda_device() chose (dist/gpu_selection.hpp)
  std::shared_ptr<Communicator> communicator;  // null: single process without DDP
  // Aborts the job when a collective stalls (--comm-timeout). Declared before the reducer so that it outlives it:
  // a reducer torn down on an error may still wait for a collective, and that wait stays bounded.
  std::shared_ptr<CommWatchdog> watchdog;
  std::shared_ptr<Reducer> reducer;  // null: no gradient reduction
  std::string launcher = "none";
  bool overlap = true;

  void reducer_begin(bool sync, void* compute_stream);
  void reducer_mark_ready(size_t begin, size_t end);
  void reducer_finish();
  std::string describe() const;  // "NCCL, 2 ranks, 13 buckets (25 MB), hook bf16, overlap"
};

// Reads rank/world from the environment (launcher, mpirun, srun, torchrun); creates the communicator when the job
// has several ranks or --ddp is given.
DistContext setup_distributed(const TrainOptions& options, const ParamLayout& layout);
// Rank 0's parameters overwrite everyone's (host buffer), after checking that all ranks agree on the model,
// device, precision, batch, accumulation and optimizer (the broadcast's size depends on the model: it must not
// start before that check); disagreement is an error on every rank naming both values.
void broadcast_initial_parameters(DistContext& dist, const TrainOptions& options, const ParamLayout& layout,
                                  float* host_params);
// Builds the bucket plan and the reducer over the engine's gradient buffer, after checking that all ranks agree
// on the hook, the bucket plan and --no-overlap.
void attach_reducer(DistContext& dist, const TrainOptions& options, const ParamLayout& layout, StepEngine& engine);

}  // namespace ddpx
