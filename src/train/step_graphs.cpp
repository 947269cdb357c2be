// Capture/replay policy for whole-step CUDA graphs; see step_graphs.hpp.
#include "train/step_graphs.hpp"

#include <algorithm>

#include "core/error.hpp"
#ifdef DDPX_HAVE_CUDA
#include "train/cuda_engine.hpp"
#endif

namespace ddpx {

StepGraphs::StepGraphs(const TrainOptions& options, StepEngine& engine, int64_t start_step) : engine_(engine) {
  if (options.cuda_graph == "off" || !engine.is_cuda()) {
    DDPX_REQUIRE(options.cuda_graph != "on" || engine.is_cuda(), "--cuda-graph on needs --device cuda");
    return;
  }
  const bool exact = options.grad_accum == 1 && options.optimizer == "sgd";
  if (options.cuda_graph == "on")
    DDPX_REQUIRE(exact,
                 "--cuda-graph on: a replayed step must equal the eager one, which holds only with --optimizer sgd "
                 "and --grad-accum 1 (got --optimizer {} --grad-accum {}); use --cuda-graph auto or off",
                 options.optimizer, options.grad_accum);
  enabled = exact;
  int64_t after = std::max<int64_t>(options.warmup_steps, 2);
  if (options.comm_hook.rfind("powersgd", 0) == 0) after = std::max(after, options.powersgd_start + 1);
  first_step = start_step + after;
}

void StepGraphs::run(int64_t step, const std::function<void()>& calls, const std::function<void()>& before_replay,
                     const std::function<void(void*)>& after_replay) {
#ifdef DDPX_HAVE_CUDA
  auto& cuda = static_cast<CudaStepEngine&>(engine_);
  if (!cuda.has_graph(cuda.input_parity())) {
    cuda.capture_begin();
    calls();
    cuda.capture_end();
  }
  if (before_replay) before_replay();
  cuda.replay(step);
  if (after_replay) after_replay(cuda.compute_stream());
#else
  (void)step, (void)before_replay, (void)after_replay;
  calls();
#endif
}

}  // namespace ddpx
