// Evaluation during training (see run_evaluation.hpp).
#include "train/run_evaluation.hpp"

#include <charconv>

#include "core/error.hpp"
#include "data/dataset.hpp"
#include "train/step_engine.hpp"

namespace ddpx {

EvalEvery parse_eval_every(std::string_view text) {
  if (text == "epoch") return {.epoch = true};
  int64_t steps = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), steps);
  DDPX_REQUIRE(ec == std::errc() && end == text.data() + text.size() && steps > 0,
               "--eval-every {}: give a positive number of steps or 'epoch'", text);
  return {.steps = steps};
}

RunEvaluator::RunEvaluator(const Dataset& val, EvalEvery every, int64_t steps_per_epoch, int64_t last_step,
                           int64_t image_numel, int64_t classes, int64_t batch)
    : val_(val),
      every_(every),
      steps_per_epoch_(steps_per_epoch),
      last_step_(last_step),
      image_numel_(image_numel),
      classes_(classes),
      batch_(batch),
      size_(val.batches_per_epoch(1, 1)) {
  DDPX_REQUIRE(!every.epoch || steps_per_epoch > 0,
               "--eval-every epoch: the training data ({}) has no epochs; give a number of steps instead",
               val.describe());
  DDPX_REQUIRE(size_ > 0, "--val {}: no samples to evaluate (an image source with a known size is needed: idx:, "
               "folder:, pack:)", val.describe());
}

bool RunEvaluator::due(int64_t step) const {
  if (step == last_step_) return true;
  if (every_.epoch) return step % steps_per_epoch_ == 0;
  return every_.steps > 0 && step % every_.steps == 0;  // none: the last step only
}

EvalResult RunEvaluator::evaluate(StepEngine& engine, bool weight_average, Communicator* comm, int rank,
                                  int world) const {
  const EvalReader read = [&](int64_t first, int64_t count, float* images, int32_t* labels) {
    for (int64_t i = 0; i < count; ++i)
      val_.fill_batch(first + i, 0, 1, 1, images + i * image_numel_, labels + i);
  };
  const EvalLogits logits = [&](const float* images, int64_t count) {
    if (weight_average) return *engine.weight_average_logits(images, count);
    return engine.eval_logits(images, count);
  };
  return evaluate_set(read, logits, size_, image_numel_, classes_, batch_, comm, rank, world);
}

}  // namespace ddpx
