// The progress line `ddpx train` prints every --log-every steps, and the durations it and `ddpx eval` show.
// Guarantees: pure formatting of the values given (no clock is read here); the ETA is the remaining steps at the
// mean pace of this run's steps so far (a resumed run counts only its own), "ETA -" before any step is done;
// durations read "42s", "3m05s", "1h02m", never a negative or non-finite value (shown as "-").
#pragma once
#include <cstdint>
#include <string>

namespace ddpx {

struct ProgressPoint {
  int64_t step = 0;         // the step just done (1-based, counting a resumed run's earlier steps)
  int64_t total_steps = 0;  // --steps
  int64_t start_step = 0;   // the step this run started after (--resume), 0 otherwise
  float loss = 0;
  double lr = 0;                 // the learning rate this step used
  double steps_per_s = 0;        // since the last progress line
  double images_per_step = 0;    // batch x accumulation x ranks
  double elapsed_s = 0;          // since this run's first step began
  double data_wait_ms = 0;       // mean per step since the last progress line: waiting for the batch (--metrics)
};

// "step     20/100 | loss 2.1234 | lr 0.001 |    12.34 steps/s |     395.1 images/s | 5s elapsed, ETA 20s"
std::string progress_line(const ProgressPoint& point);

// Seconds as "42s", "3m05s" or "1h02m"; "-" for a negative or non-finite value.
std::string short_duration(double seconds);

}  // namespace ddpx
