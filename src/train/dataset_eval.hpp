// One evaluation of a whole data set, sharded over the job's ranks (`ddpx eval --data`): the figures --val gives
// during training (train/evaluation.hpp: loss, top-1, top-5), the confusion matrix, and the logits where asked.
// Guarantees:
//  - Rank r of w evaluates eval_shard(total, r, w), as --val does; the totals and the matrix are summed over ranks,
//    so every rank holds the result of the whole set, equal to a one-rank evaluation's (the counts exactly).
//  - keep_logits: rank 0 returns the logits of every sample [total, classes] in sample order (one all-gather of
//    each rank's shard, padded to the largest); the other ranks return none.
//  - labelled = false (images without labels): only the logits; result and matrix stay empty.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "train/confusion_matrix.hpp"
#include "train/evaluation.hpp"

namespace ddpx {

class Communicator;

struct DatasetEvaluation {
  EvalResult result;
  ConfusionMatrix confusion{0};
  std::vector<float> logits;  // rank 0 with keep_logits: [total, classes]
};

struct DatasetEvalJob {
  EvalReader read;    // samples [first, first + count) of the set
  EvalLogits logits;  // the engine's logits of `count` images
  int64_t total = 0, image_numel = 0, classes = 0, batch = 64;
  bool labelled = true, keep_logits = false;
  Communicator* comm = nullptr;  // null: one rank
  int rank = 0, world = 1;
  // After each batch of this rank's shard: (samples done, samples in the shard).
  std::function<void(int64_t done, int64_t shard)> progress;
};

DatasetEvaluation evaluate_dataset(const DatasetEvalJob& job);

}  // namespace ddpx
