// Evaluation during training (--eval-every N|epoch on --val SOURCE): when it is due, and the whole --val set
// evaluated on every rank's shard (train/evaluation.hpp) with the weights and, under --ema-decay, their average.
// Guarantees: parse_eval_every() takes a positive step count or "epoch" and names --eval-every in its errors; due()
// is true every N steps (or at each epoch's last step) and at the run's last step, only there for an EvalEvery of
// neither; the --val set's size is its
// unshuffled sample count (Dataset::batches_per_epoch(1, 1)), read sample k as the one-sample batch k of one rank,
// so each sample is read once, in order, whatever the world size.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "train/evaluation.hpp"

namespace ddpx {

class Communicator;
class Dataset;
class StepEngine;

struct EvalEvery {
  int64_t steps = 0;  // > 0: every this many steps
  bool epoch = false;  // at the end of every epoch
  // Neither: the last step only (--val without --eval-every in a run given in --steps; train/run_plan.hpp).
};
EvalEvery parse_eval_every(std::string_view text);

class RunEvaluator {
 public:
  // steps_per_epoch: 0 when the training source has no epochs (then "epoch" is refused naming --eval-every).
  RunEvaluator(const Dataset& val, EvalEvery every, int64_t steps_per_epoch, int64_t last_step, int64_t image_numel,
               int64_t classes, int64_t batch);
  bool due(int64_t step) const;
  int64_t size() const { return size_; }
  // Every rank calls this at the same step (it all-gathers the totals).
  EvalResult evaluate(StepEngine& engine, bool weight_average, Communicator* comm, int rank, int world) const;

 private:
  const Dataset& val_;
  EvalEvery every_;
  int64_t steps_per_epoch_, last_step_, image_numel_, classes_, batch_, size_;
};

}  // namespace ddpx
