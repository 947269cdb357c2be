// ConfusionMatrix: per (true class, predicted class) counts of an evaluation, for `ddpx eval`'s per-class accuracy
// and confusion table.
// Guarantees:
//  - The predicted class is top-1's (train/evaluation.hpp): the label when no logit is strictly larger than the
//    label's, else the first largest logit; so the diagonal's sum is EvalTotals::top1 for the same logits.
//  - sum_over_ranks gives every rank the sum of all ranks' counts (one all-gather, summed in rank order).
//  - The tables are plain text a person reads at a glance: every class when there are few, otherwise the classes
//    and confusions that matter most (the lowest accuracies, the largest off-diagonal counts), saying what was left
//    out; to_json() always holds every class and the whole matrix.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace ddpx {

class Communicator;

class ConfusionMatrix {
 public:
  explicit ConfusionMatrix(int64_t classes);
  // Adds a batch of logits [n, classes] with their labels (each in [0, classes): accumulate_eval checks them).
  void add(const float* logits, const int32_t* labels, int64_t n);
  int64_t classes() const { return classes_; }
  int64_t at(int64_t truth, int64_t predicted) const {
    return counts_[static_cast<size_t>(truth * classes_ + predicted)];
  }
  int64_t images_of(int64_t truth) const;  // the row's sum
  int64_t correct_of(int64_t truth) const { return at(truth, truth); }
  std::vector<int64_t>& counts() { return counts_; }  // [truth * classes + predicted]
  const std::vector<int64_t>& counts() const { return counts_; }

 private:
  int64_t classes_;
  std::vector<int64_t> counts_;
};

ConfusionMatrix sum_over_ranks(Communicator* comm, const ConfusionMatrix& mine);

// "0 T-shirt/top" or "0" (names: empty, or one per class).
std::string class_label(int64_t index, const std::vector<std::string>& names);
// Every class's accuracy up to `max_rows` classes, else the `max_rows` lowest and a line saying how many were left.
std::string per_class_table(const ConfusionMatrix& matrix, const std::vector<std::string>& names,
                            int64_t max_rows = 50);
// The whole matrix up to `max_classes` classes, else the 10 largest off-diagonal counts (true -> predicted).
std::string confusion_table(const ConfusionMatrix& matrix, const std::vector<std::string>& names,
                            int64_t max_classes = 20);
// {"classes": [{"index", "name"?, "images", "correct", "accuracy"}...], "matrix": [[...]...]} (rows: true class).
nlohmann::json confusion_json(const ConfusionMatrix& matrix, const std::vector<std::string>& names);

}  // namespace ddpx
