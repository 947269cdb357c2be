// Calibration steps: which warm-up steps of a DDP run time the plain step (no reducer during backward) that DDP's
// cost is measured against (analysis/ddp_cost.hpp). The schedule is a pure function, tested on the CPU.
//
// Note [Calibration steps]
// DDP's cost is the DDP step minus the step the same run takes without DDP. Exposed communication alone misses
// what overlap hides but still costs: a backward pass slowed by the hooks' kernels and the reducer's events on
// the device, the hooks' host work, the reducer's bookkeeping (on one H200, --ddp at world 1 ran 6.4% slower while
// its exposed communication was 0.0%). So the warm-up runs a few calibration steps whose backward pass runs
// exactly as without --ddp (no spans marked, no bucket hooks, no reducer events or waits inside it), timed as the
// measured steps are (CPU: the host's wall clock; CUDA: the compute stream's events, data wait added).
// A calibration step must not change the training math, at any world size and with any hook:
//  - At world > 1 a step without the all-reduce would leave the ranks' weights apart, and at world 1 a lossy hook
//    (fp16, bf16, PowerSGD with its error feedback) changes the gradients even without peers. So after the plain
//    backward the calibration step reduces the whole gradient buffer through the same reducer: one synchronized
//    step whose buckets all launch after the backward pass (as --no-overlap does), in the same order, through the
//    same hook at the same synchronized-step number. Each bucket's hook therefore sees the same input and state
//    and leaves the same result as in an overlapped step: a bucket's reduction never depends on when it runs.
//  - The optimizer then runs once over the whole buffer (optimizer_step) instead of span by span after each
//    bucket (the reducer's after-reduce is switched off for that step): element-wise updates give the same
//    weights bit for bit (Note [Optimizer overlapped with backward], train/step_engine.hpp), and that is also
//    where a run without --ddp puts its optimizer (--optimizer-overlap auto).
//  - Gradient accumulation: every micro-batch runs without the reducer (its non-synchronized micro-steps
//    communicate nothing anyway); the reduction follows the last one.
// So the calibration steps replace some warm-up steps' path, not their result: the weights equal a run without
// calibration (bit for bit on the CPU, where a collective's result does not depend on its timing; tested at one
// and two ranks). The plain step's time is the calibration step's time without its trailing reduction (CPU: the
// host time around it; CUDA: the compute stream's wait for it between backward and optimizer).
// Where they run: the last steps of the warm-up, never its first step (cold caches, first allocations), after
// the CUDA graph captures (with graphs the calibration step is a captured graph of its own per input parity, so
// it is timed as the replayed measured steps are), and ending `phase_time_lag` steps before the measured steps:
// the CUDA engine hands over a step's phase times one step late, so a measured step's record must never hold a
// calibration step's times. A warm-up too short for them gives fewer or none, and the run says so.
#pragma once
#include <cstdint>
#include <string>

namespace ddpx {

struct CalibrationSchedule {
  int64_t first_step = 0;  // trainer steps first_step..last_step (inclusive) calibrate
  int64_t last_step = -1;
  std::string shortfall;   // non-empty when fewer steps than requested fit: why, naming the flag to raise
  int64_t count() const { return last_step >= first_step ? last_step - first_step + 1 : 0; }
  bool contains(int64_t step) const { return step >= first_step && step <= last_step; }
};

struct CalibrationRequest {
  int64_t steps = 0;           // --calibrate-steps
  int64_t warmup = 0;          // --warmup
  int64_t start_step = 0;      // the steps this run continues after (--resume), 0 otherwise
  bool with_reducer = false;   // only DDP runs calibrate
  int64_t earliest_step = 0;   // the first step allowed to calibrate (after the graph captures); 0: start_step + 2
  int64_t phase_time_lag = 0;  // steps by which the engine hands over phase times late (CPU 0, CUDA 1)
};

CalibrationSchedule plan_calibration(const CalibrationRequest& request);

// Steps the CUDA graph schedule (train/step_graphs.hpp) keeps free at the end of the warm-up for calibration:
// the calibration steps and the lag after them; 0 when the run does not calibrate.
int64_t calibration_reserve(const CalibrationRequest& request);

}  // namespace ddpx
