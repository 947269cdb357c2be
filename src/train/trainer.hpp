// run_training: the training loop of `ddpx train` on one rank (CPU or CUDA, with or without data parallelism).
// Guarantees: rank 0 prints a progress line every --log-every steps and a summary at the end; every rank runs
// the same number of optimizer steps; with --checkpoint-dir a checkpoint is written atomically every
// --checkpoint-every steps and at the end, and --resume continues bit-identically on the CPU.
#pragma once
#include <cstdint>
#include <string>

#include "train/train_options.hpp"

namespace ddpx {

struct TrainSummary {
  int64_t steps_run = 0;
  double first_loss = 0, final_loss = 0;
  double seconds = 0;
  double steps_per_s = 0;   // over the steps after warm-up
  double images_per_s = 0;  // all ranks together
  double data_wait_fraction = 0;
  int world_size = 1;
};

TrainSummary run_training(const TrainOptions& options);

}  // namespace ddpx
