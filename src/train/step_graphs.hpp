// StepGraphs: whether and from which step the trainer replays whole steps as CUDA graphs, and the capture-or-
// replay decision per step. Graphs are used only where replay is exactly the eager step: CUDA engine, one
// micro-batch per step (no accumulation), an optimizer whose replay is exact (OptimizerSpec::graph_replay_exact:
// SGD's step number only matters at step 1; AdamW's bias correction changes every step), after the warm-up, and
// no draw made on the host per batch (--mixup/--cutmix: the CUDA engine applies each batch's own draw), and
// only once the communication hook enqueues the same work every step
// (CommHook::capturable_from_step(): PowerSGD's first compressed step allocates, so it is never the captured one).
// Step numbers: trainer steps are 1-based; the reducer counts synchronized steps from 0 at the first step this
// process runs (start_step + 1), so trainer step s is synchronized step s - start_step - 1.
// With a reducer each input parity gets a second graph that also records bucket ready times (GraphVariant::timed,
// replayed at the steps whose bucket timings are sampled; see Note [Bucket ready times cost a graph node] in
// ddp/cuda_bucket_launcher.cpp): four captures, plain ones first, all inside the warm-up where it is long enough.
#pragma once
#include <functional>

#include "train/graph_capture.hpp"
#include "train/train_options.hpp"

namespace ddpx {

// What the graph policy reads of a run (step_graph_options() fills it from TrainOptions).
struct StepGraphOptions {
  GraphPolicy cuda_graph = GraphPolicy::automatic;
  int64_t grad_accum = 1;
  OptimizerSpec optimizer;  // graph_replay_exact() decides
  CommHookSpec comm_hook;   // named in --cuda-graph on's refusal
  int64_t warmup_steps = 5;
  bool host_draw_per_batch = false;  // --mixup/--cutmix
  bool host_ema_cadence = false;     // --ema-every N > 1 or --ema-copy-epochs: the host decides each step's update
};
StepGraphOptions step_graph_options(const TrainOptions& options);

// Whether a run replays graphs and the trainer step it captures at (plan_step_graphs is the whole policy; errors
// for --cuda-graph on where it cannot hold name the flag).
struct StepGraphSchedule {
  bool enabled = false;
  int64_t first_step = 0;
  bool timed_variants = false;  // each input parity also has its timed graph
  int64_t captures = 0;         // plain (and timed) graphs captured at first_step, first_step + 1, ...
};
// engine_captures: the engine can capture graphs (StepEngine::graph_capture(), the CUDA engine's).
// timed_variants: a reducer's bucket timings are sampled, so each parity also gets its timed graph.
// reserved_steps: warm-up steps to keep after the captures (calibration, train/calibration.hpp): the captures
// move that much earlier where the warm-up allows.
StepGraphSchedule plan_step_graphs(const StepGraphOptions& options, bool engine_captures, int64_t start_step,
                                   int64_t hook_capturable_from, bool timed_variants = false,
                                   int64_t reserved_steps = 0);
// The graph that graph step `step` (>= first_step) replays: the plain graphs at the first two graph steps, the
// timed ones at the next two (their captures), then timed where `sampled` (the step's bucket timings are read),
// else plain. Always plain without timed variants.
GraphVariant choose_graph_variant(const StepGraphSchedule& schedule, int64_t step, bool sampled);

class StepGraphs {
 public:
  // capture: the engine's StepEngine::graph_capture() (nullptr: the engine has none, so no graphs; --cuda-graph
  // on is refused). hook_capturable_from: the reducer's ReducerPort::capturable_from_step() (0 without one).
  StepGraphs(const StepGraphOptions& options, GraphCapture* capture, int64_t start_step,
             int64_t hook_capturable_from = 0, bool timed_variants = false, int64_t reserved_steps = 0);
  bool enabled = false;
  int64_t first_step = 0;
  int64_t captures = 0;  // the plain/timed captures from first_step on (calibration graphs come after them)
  // Whether step `step` runs as a graph (captured now or replayed).
  bool replays(int64_t step) const { return enabled && step >= first_step; }
  GraphVariant variant_for(int64_t step, bool sampled) const { return choose_graph_variant(schedule_, step, sampled); }
  // Captures `calls` into the current input parity's graph of `variant` if there is none yet, then replays it.
  // Returns whether it captured. Only where replays(step).
  bool run(int64_t step, GraphVariant variant, const std::function<void()>& calls);

 private:
  GraphCapture* capture_;
  StepGraphSchedule schedule_;
};

}  // namespace ddpx
