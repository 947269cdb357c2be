// Capture/replay policy for whole-step CUDA graphs; see step_graphs.hpp.
#include "train/step_graphs.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "ddp/comm_hook.hpp"

namespace ddpx {

StepGraphOptions step_graph_options(const TrainOptions& options) {
  return {.cuda_graph = options.cuda_graph,
          .grad_accum = options.grad_accum,
          .optimizer = options.optimizer,
          .comm_hook = options.comm_hook,
          .warmup_steps = options.warmup_steps,
          .host_draw_per_batch = options.recipe.mix.enabled(),
          .host_ema_cadence = options.recipe.ema_decay != 0 && !options.recipe.ema_cadence.every_step()};
}

StepGraphSchedule plan_step_graphs(const StepGraphOptions& options, bool engine_captures, int64_t start_step,
                                   int64_t hook_capturable_from, bool timed_variants, int64_t reserved_steps) {
  StepGraphSchedule schedule;
  if (options.cuda_graph == GraphPolicy::off || !engine_captures) {
    DDPX_REQUIRE(options.cuda_graph != GraphPolicy::on || engine_captures, "--cuda-graph on needs --device cuda");
    return schedule;
  }
  const bool exact = options.grad_accum == 1 && options.optimizer.graph_replay_exact();
  const bool hook_capturable = hook_capturable_from != CommHook::kNeverCapturable;
  if (options.cuda_graph == GraphPolicy::on) {
    DDPX_REQUIRE(hook_capturable,
                 "--cuda-graph on: the communication hook '{}' changes its work every step and cannot be replayed "
                 "from a graph; use --cuda-graph auto or off",
                 options.comm_hook.text());
    DDPX_REQUIRE(exact,
                 "--cuda-graph on: a replayed step must equal the eager one, which holds only with --optimizer sgd "
                 "and --grad-accum 1 (got --optimizer {} --grad-accum {}); use --cuda-graph auto or off",
                 options.optimizer.name(), options.grad_accum);
    DDPX_REQUIRE(!options.host_draw_per_batch,
                 "--cuda-graph on: --mixup/--cutmix draw each batch's mix on the host, which a replayed graph would "
                 "repeat; use --cuda-graph auto (it leaves graphs off for such runs) or off");
    DDPX_REQUIRE(!options.host_ema_cadence,
                 "--cuda-graph on: --ema-every above 1 and --ema-copy-epochs decide each step's weight-average update on "
                 "the host, which a replayed graph would not; use --cuda-graph auto (it leaves graphs off for such "
                 "runs) or off");
  }
  schedule.enabled = exact && hook_capturable && !options.host_draw_per_batch && !options.host_ema_cadence;
  if (!schedule.enabled) return schedule;
  schedule.timed_variants = timed_variants;
  // Captured at trainer step start_step + after, i.e. synchronized step after - 1: at least 1 (one eager step
  // first, where hooks and cuBLASLt may allocate) and at least the hook's capturable step. The graph of the
  // other input parity is captured one step later (then the two timed ones, with timed variants); the captures
  // fall inside the warm-up where it is long enough (capture and instantiation are not training throughput).
  const int64_t captures = timed_variants ? 4 : 2;
  schedule.captures = captures;
  const int64_t after = std::max(
      {options.warmup_steps - (captures - 1) - reserved_steps, int64_t{2}, hook_capturable_from + 1});
  schedule.first_step = start_step + after;
  return schedule;
}

StepGraphs::StepGraphs(const StepGraphOptions& options, GraphCapture* capture, int64_t start_step,
                       int64_t hook_capturable_from, bool timed_variants, int64_t reserved_steps)
    : capture_(capture),
      schedule_(plan_step_graphs(options, capture != nullptr, start_step, hook_capturable_from, timed_variants,
                                 reserved_steps)) {
  enabled = schedule_.enabled;
  first_step = schedule_.first_step;
  captures = schedule_.captures;
}

GraphVariant choose_graph_variant(const StepGraphSchedule& schedule, int64_t step, bool sampled) {
  if (!schedule.timed_variants || step < schedule.first_step + 2) return GraphVariant::plain;
  if (step < schedule.first_step + 4) return GraphVariant::timed;
  return sampled ? GraphVariant::timed : GraphVariant::plain;
}

bool StepGraphs::run(int64_t step, GraphVariant variant, const std::function<void()>& calls) {
  DDPX_INTERNAL_ASSERT(replays(step), "step {} run as a graph outside the graph schedule (from step {}, enabled {})",
                       step, first_step, enabled);
  const bool capture = !capture_->has_graph(capture_->input_parity(), variant);
  if (capture) {
    capture_->capture_begin(variant);
    try {
      calls();
    } catch (...) {
      capture_->capture_abandon();  // the stream must not stay in capture mode while the error unwinds
      throw;
    }
    capture_->capture_end();
  }
  capture_->replay(step, variant);
  return capture;
}

}  // namespace ddpx
