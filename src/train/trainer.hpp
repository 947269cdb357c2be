// run_training: the training loop of `ddpx train` on one rank (CPU or CUDA, with or without data parallelism).
// Guarantees: rank 0 prints a progress line every --log-every steps and a summary at the end; every rank runs
// the same number of optimizer steps; with --checkpoint-dir a checkpoint is written atomically every
// --checkpoint-every steps and at the end, and --resume continues bit-identically on the CPU. A flag, file, data or
// plan error that needs no world is raised before the job (dist/job.hpp) opens; a plan counted in epochs is made
// after it, at the job's world (Note [The job opens before the plan], trainer.cpp).
#pragma once
#include "train/train_options.hpp"
#include "train/train_summary.hpp"

namespace ddpx {

TrainSummary run_training(const TrainOptions& options);

}  // namespace ddpx
