// TrainSummary: what a finished run_training() hands back (and the run report records): steps, losses and
// throughput over the measured steps.
#pragma once
#include <cstdint>

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

}  // namespace ddpx
