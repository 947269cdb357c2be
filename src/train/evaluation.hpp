// Evaluation over a whole validation set (--eval-every, `ddpx eval --data`): mean cross-entropy, top-1 and top-5,
// sharded across ranks with exact counts.
// Guarantees:
//  - eval_shard() gives rank r of w the samples [floor(N r / w), floor(N (r + 1) / w)): the shards are disjoint and
//    cover [0, N) for every N and w (no sample twice, none dropped, also when w does not divide N);
//  - the totals are exchanged with one all-gather and summed in rank order on every rank, so every rank holds the
//    same result, and it equals a one-rank evaluation's up to the order the loss is summed in (the counts exactly);
//  - top-k counts a sample when its label's logit is among the k largest, ties counted against it (a label tied
//    with the k-th largest logit is a hit only if fewer than k logits are strictly larger); k above the class
//    count counts every sample;
//  - the loss is the plain cross-entropy (no label smoothing): the figure PyTorch users compare.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ddpx {

class Communicator;

struct EvalTotals {
  double loss_sum = 0;
  int64_t top1 = 0, top5 = 0, count = 0;
};

struct EvalResult {
  double loss = 0, top1 = 0, top5 = 0;  // mean loss; accuracies in percent
  int64_t count = 0;                    // samples evaluated, all ranks
  int64_t classes = 0;                  // the model's classes (0: not known)
  // "val loss 0.3712 | top-1 86.41% | top-5 99.70% (10000 images)"; top-5 only where 5 < classes (or classes
  // unknown): with 5 classes or fewer it is 100% by definition
  std::string describe() const;
};

std::pair<int64_t, int64_t> eval_shard(int64_t total, int rank, int world);
// Adds one batch of logits [n, classes] and labels to the totals; labels outside [0, classes) are an error naming
// the index and value.
void accumulate_eval(const float* logits, const int32_t* labels, int64_t n, int64_t classes, EvalTotals& totals);
EvalResult finish_eval(const EvalTotals& totals);
// The sum of every rank's totals (one all-gather through dist/host_collectives); comm nullptr: one rank.
EvalTotals sum_over_ranks(Communicator* comm, const EvalTotals& mine);

// Reads samples [first, first + count) of the validation set.
using EvalReader = std::function<void(int64_t first, int64_t count, float* images, int32_t* labels)>;
// Logits of `count` images (host NCHW): the engine's eval_logits, or the weight average's.
using EvalLogits = std::function<std::vector<float>(const float* images, int64_t count)>;
// This rank's shard in batches of `batch`, then the sum over ranks.
EvalResult evaluate_set(const EvalReader& read, const EvalLogits& logits, int64_t total, int64_t image_numel,
                    int64_t classes, int64_t batch, Communicator* comm, int rank, int world);

}  // namespace ddpx
