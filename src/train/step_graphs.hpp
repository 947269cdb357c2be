// StepGraphs: whether and from which step the trainer replays whole steps as CUDA graphs, and the capture-or-
// replay decision per step. Graphs are used only where replay is exactly the eager step: CUDA engine, one
// micro-batch per step (no accumulation), SGD (its step number only matters at step 1; AdamW's bias correction
// changes every step), and after the warm-up (and after PowerSGD's plain all-reduce phase).
#pragma once
#include <functional>

#include "train/step_engine.hpp"
#include "train/train_options.hpp"

namespace ddpx {

class StepGraphs {
 public:
  StepGraphs(const TrainOptions& options, StepEngine& engine, int64_t start_step);
  bool enabled = false;
  int64_t first_step = 0;
  // Captures `calls` into the graph of the current input parity if there is none yet, then replays it between
  // before_replay() and after_replay(compute_stream) (the reducer's watchdog hooks; either may be empty).
  void run(int64_t step, const std::function<void()>& calls, const std::function<void()>& before_replay = {},
           const std::function<void(void*)>& after_replay = {});

 private:
  StepEngine& engine_;
};

}  // namespace ddpx
