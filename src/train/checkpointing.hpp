// Checkpoints of a training run: the engine's parameters and optimizer state through io/checkpoint, plus the
// step, the table's checkpoint rows as the metadata's "extra" (train/run_settings.hpp: seed, data, batch,
// accumulation, class names, the schedule, --ema-decay) and, with --ema-decay, the weight average and its update count (refused on resume unless the run has the
// same --ema-decay). Data needs no saved state (batches are a pure function of seed and step), so resuming at step
// k sees exactly the batches an uninterrupted run sees from step k+1 on. The optimizer state is stored under the
// names options.optimizer.state_names() gives (optim/optimizer_spec.hpp), with its hyperparameters.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>

#include "io/checkpoint.hpp"
#include "model/flat_layout.hpp"
#include "optim/optimizer.hpp"
#include "train/run_settings.hpp"
#include "train/step_engine.hpp"
#include "train/train_options.hpp"

namespace ddpx {

// Where the data stream stands at a checkpoint (CheckpointState::data_position): micro-batch m = step x
// grad_accum of the run, and for sources with epochs (image sources, npy) its epoch m / B and batch m mod B of B
// batches per epoch at this world size (Note [Epochs and the sampler], data/epoch_sampler.hpp). A batch is a pure function of (seed, m,
// rank, world), so --resume continues mid-epoch with exactly the batches an uninterrupted run would have seen;
// resuming with another world size would cut the epochs differently and is refused.
struct DataPosition {
  int64_t micro_batch = 0;
  int64_t batches_per_epoch = 0;  // 0: the source has no epochs (synthetic, learnable, synthetic-device)
  int world = 1;
};

void save_training_checkpoint(const std::filesystem::path& dir, const FlatLayout& layout, const float* params,
                              const TrainOptions& options, const RunSettings& settings,
                              const HostOptimizerState& state, int64_t step, const DataPosition& position = {});
// The same, written but not yet committed (io/checkpoint.hpp: PendingCheckpoint).
PendingCheckpoint prepare_training_checkpoint(const std::filesystem::path& dir, const FlatLayout& layout,
                                              const float* params, const TrainOptions& options,
                                              const RunSettings& settings, const HostOptimizerState& state,
                                              int64_t step, const DataPosition& position = {});

struct LoadedCheckpoint {
  int64_t step = 0;
  HostOptimizerState optimizer;
  std::vector<int64_t> attempt_starts;  // the run's attempts up to the checkpoint's (empty: not recorded)
};
// world: the ranks of this run (DistJob::world()); a checkpoint stopped inside an epoch resumes only with as many.
LoadedCheckpoint load_training_checkpoint(const std::filesystem::path& dir, const FlatLayout& layout,
                                          const TrainOptions& options, float* params, int world);

}  // namespace ddpx
