// The calibration schedule; see calibration.hpp and Note [Calibration steps].
#include "train/calibration.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace ddpx {

CalibrationSchedule plan_calibration(const CalibrationRequest& r) {
  CalibrationSchedule schedule;
  if (!r.with_reducer || r.steps <= 0) return schedule;
  const int64_t earliest = std::max(r.earliest_step, r.start_step + 2);  // never the first, cold, step
  const int64_t latest = r.start_step + r.warmup - r.phase_time_lag;     // the lag keeps measured records clean
  const int64_t fit = latest - earliest + 1;  // negative when even the first calibration step is too late
  const int64_t count = std::clamp<int64_t>(fit, 0, r.steps);
  schedule.last_step = latest;
  schedule.first_step = latest - count + 1;
  if (count < r.steps)
    schedule.shortfall = fmt::format(
        "--warmup {} holds {} of --calibrate-steps {} (calibration steps follow the first warm-up step{} and end "
        "{} step(s) before the measured steps); raise --warmup by {}",
        r.warmup, count, r.steps, r.earliest_step > r.start_step + 2 ? " and the CUDA graph captures" : "",
        r.phase_time_lag, r.steps - fit);  // each warm-up step more adds one: the graph captures stay put there
  return schedule;
}

int64_t calibration_reserve(const CalibrationRequest& r) {
  if (!r.with_reducer || r.steps <= 0) return 0;
  return r.steps + r.phase_time_lag;
}

}  // namespace ddpx
