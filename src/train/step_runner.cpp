// The three step protocols over one micro-batch body; see step_runner.hpp and Note [One micro-batch body, three
// step protocols] (docs/design.md).
#include "train/step_runner.hpp"

#include <chrono>
#include <optional>

#include "train/nvtx.hpp"

namespace ddpx {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

}  // namespace

StepRunner::StepRunner(StepEngine& engine, BatchLoader& loader, ReducerPort& reducer, StepGraphs& graphs,
                       const CalibrationSchedule& calibration, int64_t micro_per_step, bool overlap_optimizer)
    : engine_(engine),
      loader_(loader),
      reducer_(reducer),
      graphs_(graphs),
      calibration_(calibration),
      micro_per_step_(micro_per_step),
      overlap_optimizer_(overlap_optimizer) {}

StepOutcome StepRunner::run(int64_t step, bool sample_buckets) {
  if (calibration_.contains(step)) return calibrating(step);
  if (graphs_.replays(step)) return replayed(step, sample_buckets);
  return eager(step, sample_buckets);
}

StepOutcome StepRunner::eager(int64_t step, bool sample_buckets) {
  StepOutcome outcome;
  reducer_.record_ready_times(sample_buckets);
  engine_.zero_grads();
  for (int64_t micro = 0; micro < micro_per_step_; ++micro) {
    const bool last_micro = micro + 1 == micro_per_step_;
    with_next_batch(outcome, [&] {
      micro_batch(step, last_micro ? MicroBatch::synchronized : MicroBatch::accumulating);
      // An accumulation micro-batch is a reducer step of its own that communicates nothing.
      if (!last_micro) reducer_.finish();
    });
  }
  const auto comm_wait_start = Clock::now();
  reducer_.finish();
  outcome.comm_wait_ms = ms_since(comm_wait_start);
  NvtxRange optimizer_range("optimizer step");
  finish_optimizer(step);
  return outcome;
}

StepOutcome StepRunner::replayed(int64_t step, bool sample_buckets) {
  StepOutcome outcome;
  const GraphVariant variant = graphs_.variant_for(step, sample_buckets);
  reducer_.record_ready_times(variant == GraphVariant::timed);
  with_next_batch(outcome, [&] {
    outcome.captured = as_graph(step, variant, [&] {
      engine_.zero_grads();
      micro_batch(step, MicroBatch::synchronized);
      reducer_.finish();
      finish_optimizer(step);
    });
  });
  return outcome;
}

// See Note [Calibration steps]: the backward without the reducer, then every bucket reduced through it (same
// hook, same synchronized step) with the optimizer once over the buffer: the same weights, the plain step's path.
StepOutcome StepRunner::calibrating(int64_t step) {
  NvtxRange calibration_range("calibration step");
  StepOutcome outcome;
  outcome.calibration = true;
  reducer_.record_ready_times(false);
  const auto reduce_then_update = [&] {
    const auto reduce_start = Clock::now();
    reducer_.reduce_whole_buffer(engine_.compute_stream());
    outcome.calibration_reduce_ms = ms_since(reduce_start);
    engine_.optimizer_step(step);
  };
  if (graphs_.replays(step)) {
    with_next_batch(outcome, [&] {
      outcome.captured = as_graph(step, GraphVariant::calibration, [&] {
        engine_.zero_grads();
        micro_batch(step, MicroBatch::unreduced);
        reduce_then_update();
      });
    });
    outcome.calibration_reduce_ms = 0;  // enqueued at capture; the replay's reduction is timed on the device
    return outcome;
  }
  engine_.zero_grads();
  for (int64_t micro = 0; micro < micro_per_step_; ++micro)
    with_next_batch(outcome, [&] { micro_batch(step, MicroBatch::unreduced); });
  reduce_then_update();
  return outcome;
}

void StepRunner::micro_batch(int64_t step, MicroBatch kind) {
  const float grad_scale = 1.0f / static_cast<float>(micro_per_step_);
  if (kind == MicroBatch::unreduced) {
    engine_.forward_backward(grad_scale, [](size_t, size_t) {});
    return;
  }
  const bool sync = kind == MicroBatch::synchronized;
  // With the optimizer overlapped, a synchronized micro-batch updates each span once it is reduced (the port:
  // the reducer's after-reduce, or at once without a reducer); see Note [Optimizer overlapped with backward].
  if (overlap_optimizer_ && sync) engine_.begin_span_updates(step);
  reducer_.begin(sync, engine_.compute_stream());
  std::optional<NvtxRange> phase_range(std::in_place, "forward");
  bool backward_begun = false;
  // Spans are marked in accumulation micro-batches too: the reducer checks them and communicates nothing.
  engine_.forward_backward(grad_scale, [&](size_t begin, size_t end) {
    if (!backward_begun) {
      backward_begun = true;
      phase_range.emplace("backward");
    }
    reducer_.mark_ready(begin, end);
  });
}

void StepRunner::with_next_batch(StepOutcome& outcome, const std::function<void()>& body) {
  const auto wait_start = Clock::now();
  const HostBatch& batch = [&]() -> const HostBatch& {
    NvtxRange get_batch_range("get batch");
    return loader_.acquire();
  }();
  outcome.data_wait_ms += ms_since(wait_start);
  engine_.set_batch(batch);
  body();
  engine_.batch_consumed(batch);
  loader_.release(batch);
}

bool StepRunner::as_graph(int64_t step, GraphVariant variant, const std::function<void()>& calls) {
  reducer_.before_replay();  // a watchdog that has fired throws here, before any capture begins
  const bool captured = graphs_.run(step, variant, calls);
  reducer_.after_replay(engine_.compute_stream());
  return captured;
}

void StepRunner::finish_optimizer(int64_t step) {
  if (overlap_optimizer_) {
    engine_.finish_span_updates();
  } else {
    engine_.optimizer_step(step);
  }
}

}  // namespace ddpx
