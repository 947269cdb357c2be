// Checkpoints of a training run: the engine's parameters and optimizer state through io/checkpoint, plus the
// step. Data needs no saved state (batches are a pure function of seed and step), so resuming at step k sees
// exactly the batches an uninterrupted run sees from step k+1 on. The optimizer state is stored under the names
// options.optimizer.state_names() gives (optim/optimizer_spec.hpp), with its hyperparameters.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>

#include "io/checkpoint.hpp"
#include "model/flat_layout.hpp"
#include "optim/optimizer.hpp"
#include "train/step_engine.hpp"
#include "train/train_options.hpp"

namespace ddpx {

void save_training_checkpoint(const std::filesystem::path& dir, const FlatLayout& layout, const float* params,
                              const TrainOptions& options, const HostOptimizerState& state, int64_t step);
// The same, written but not yet committed (io/checkpoint.hpp: PendingCheckpoint).
PendingCheckpoint prepare_training_checkpoint(const std::filesystem::path& dir, const FlatLayout& layout,
                                              const float* params, const TrainOptions& options,
                                              const HostOptimizerState& state, int64_t step);

struct LoadedCheckpoint {
  int64_t step = 0;
  HostOptimizerState optimizer;
};
LoadedCheckpoint load_training_checkpoint(const std::filesystem::path& dir, const FlatLayout& layout,
                                          const TrainOptions& options, float* params);

}  // namespace ddpx
