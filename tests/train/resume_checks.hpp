// The recipe's resume check, one body for both engines (test_recipe_training.cpp on the CPU, test_recipe_cuda.cpp
// on the GPU): a run with a weight average (--ema-decay) and --save, run straight through, then again with a
// checkpoint every 5 steps and resumed from step 5 into `resumed_save`, ends with the straight run's weights and
// average bit for bit, and the average is not the weights. Returns the resumed run's options for further checks.
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "saved_weights.hpp"
#include "train/recipe_options.hpp"
#include "train/trainer.hpp"

namespace ddpx::testing {

inline TrainOptions expect_resume_continues_the_weight_average(const TrainOptions& full,
                                                               const std::string& checkpoint_dir,
                                                               const std::string& resumed_save) {
  run_training(full);
  TrainOptions first = full;  // checkpoints at 5 and at the end; the run resumes from 5
  first.save.clear();
  first.checkpoint_dir = checkpoint_dir;
  first.checkpoint_every = 5;
  run_training(first);
  TrainOptions resumed = full;
  resumed.resume = (std::filesystem::path(checkpoint_dir) / "checkpoint-5.safetensors").string();
  resumed.save = resumed_save;
  run_training(resumed);
  EXPECT_EQ(saved_weights(full.save, full.model), saved_weights(resumed.save, full.model));
  const std::vector<float> straight_average = saved_weights(weight_average_path(full.save), full.model);
  EXPECT_EQ(straight_average, saved_weights(weight_average_path(resumed.save), full.model));
  EXPECT_NE(straight_average, saved_weights(full.save, full.model));
  return resumed;
}

}  // namespace ddpx::testing
