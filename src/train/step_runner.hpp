// StepRunner: one optimizer step of the training loop, in whichever of its three protocols the step's number
// asks for (see Note [One micro-batch body, three step protocols] in docs/design.md):
//   eager        zero the gradients; per micro-batch: stage it, forward, backward with each final span handed to
//                the reducer port; the port's finish; the optimizer (after backward, or span by span during it)
//   replayed     the eager step of one micro-batch, captured once per input parity and graph variant into a CUDA
//                graph and replayed from then on (train/step_graphs.hpp)
//   calibrating  the backward without the reducer, then the whole buffer reduced through it and the optimizer
//                over the buffer (Note [Calibration steps], train/calibration.hpp); eager or replayed
// All three run the same micro-batch body; they differ in what surrounds it. The runner talks to the reducer only
// through its ReducerPort (train/reducer_port.hpp) and to graphs only through StepGraphs.
// Guarantees: the calls each protocol makes, and their order, are those the Notes name (a replayed step is the
// eager step's calls, captured); NVTX ranges carry the seed's names ("forward", then "backward" from the first
// final span on, "optimizer step", "calibration step", "get batch"); the time spent waiting for the loader is
// the step's data wait, and the eager step's wait in the port's finish its communication wait.
#pragma once
#include <cstdint>
#include <functional>

#include "data/batch_loader.hpp"
#include "train/calibration.hpp"
#include "train/graph_capture.hpp"
#include "train/reducer_port.hpp"
#include "train/step_engine.hpp"
#include "train/step_graphs.hpp"

namespace ddpx {

// What one step measured on the host.
struct StepOutcome {
  double data_wait_ms = 0;  // waiting for the loader's batches
  double comm_wait_ms = 0;  // eager: waiting in the reducer port's finish() after backward
  bool calibration = false;  // a calibration step (Note [Calibration steps])
  double calibration_reduce_ms = 0;  // its trailing reduction's host time (0 where it ran in a graph)
  bool captured = false;             // the step was captured into its graph (and replayed) at this step
};

class StepRunner {
 public:
  // All references must outlive the runner. micro_per_step: --grad-accum; overlap_optimizer: the optimizer runs
  // span by span during backward (optimizer_overlaps(), Note [Optimizer overlapped with backward]).
  StepRunner(StepEngine& engine, BatchLoader& loader, ReducerPort& reducer, StepGraphs& graphs,
             const CalibrationSchedule& calibration, int64_t micro_per_step, bool overlap_optimizer);
  // Runs trainer step `step` (1-based). sample_buckets: this step's bucket ready times are read (so recorded).
  StepOutcome run(int64_t step, bool sample_buckets);

 private:
  StepOutcome eager(int64_t step, bool sample_buckets);
  StepOutcome replayed(int64_t step, bool sample_buckets);
  StepOutcome calibrating(int64_t step);

  // The micro-batch body every protocol shares: forward and backward of the staged micro-batch, its gradients
  // scaled by 1/micro_per_step and added into the buffer.
  //   synchronized   the step's last micro-batch: its spans go to the port (which reduces them) inside
  //                  port.begin(sync) / the caller's finish(); with the optimizer overlapped, span updates begin
  //   accumulating   an earlier micro-batch: a port step that communicates nothing
  //   unreduced      the calibration step's backward, exactly as without DDP: no port, no spans marked
  enum class MicroBatch { synchronized, accumulating, unreduced };
  void micro_batch(int64_t step, MicroBatch kind);
  // Stages the next micro-batch (its wait counted as data wait), runs `body` on it, hands it back to the loader.
  void with_next_batch(StepOutcome& outcome, const std::function<void()>& body);
  // Runs `calls` as step `step`'s graph of `variant` (captured first if that graph does not exist yet), between
  // the port's before_replay and after_replay. Returns whether it captured.
  bool as_graph(int64_t step, GraphVariant variant, const std::function<void()>& calls);
  void finish_optimizer(int64_t step);  // optimizer_step, or the end of the span updates

  StepEngine& engine_;
  BatchLoader& loader_;
  ReducerPort& reducer_;
  StepGraphs& graphs_;
  const CalibrationSchedule& calibration_;
  const int64_t micro_per_step_;
  const bool overlap_optimizer_;
};

}  // namespace ddpx
