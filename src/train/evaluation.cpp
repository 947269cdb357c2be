// Whole-set evaluation (see evaluation.hpp for the guarantees).
#include "train/evaluation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "dist/communicator.hpp"
#include "dist/host_collectives.hpp"

namespace ddpx {

std::string EvalResult::describe() const {
  // Top-5 of 5 classes or fewer counts every sample: 100% says nothing, so it is not printed.
  const std::string top_k = classes == 0 || classes > 5 ? fmt::format(" | top-5 {:.2f}%", top5) : "";
  return fmt::format("val loss {:.4f} | top-1 {:.2f}%{} ({} images)", loss, top1, top_k, count);
}

std::pair<int64_t, int64_t> eval_shard(int64_t total, int rank, int world) {
  // 128-bit products: N * r never overflows for any N an int64 holds.
  const auto at = [&](int r) {
    return static_cast<int64_t>(static_cast<__int128>(total) * r / static_cast<__int128>(world));
  };
  return {at(rank), at(rank + 1)};
}

void accumulate_eval(const float* logits, const int32_t* labels, int64_t n, int64_t classes, EvalTotals& totals) {
  for (int64_t b = 0; b < n; ++b) {
    const int32_t label = labels[b];
    DDPX_REQUIRE(label >= 0 && label < classes,
                 "evaluation: label {} at index {} is outside the model's {} classes; the validation set's classes "
                 "must be the training set's", label, b, classes);
    const float* row = logits + b * classes;
    const double max = *std::max_element(row, row + classes);
    double sum = 0;
    int64_t larger = 0;
    for (int64_t j = 0; j < classes; ++j) {
      sum += std::exp(row[j] - max);
      larger += row[j] > row[label] ? 1 : 0;
    }
    totals.loss_sum += max + std::log(sum) - row[label];
    totals.top1 += larger < 1 ? 1 : 0;
    totals.top5 += larger < 5 ? 1 : 0;
    ++totals.count;
  }
}

EvalResult finish_eval(const EvalTotals& totals) {
  const double n = static_cast<double>(std::max<int64_t>(totals.count, 1));
  return {.loss = totals.loss_sum / n,
          .top1 = 100.0 * static_cast<double>(totals.top1) / n,
          .top5 = 100.0 * static_cast<double>(totals.top5) / n,
          .count = totals.count};
}

EvalTotals sum_over_ranks(Communicator* comm, const EvalTotals& mine) {
  if (comm == nullptr || comm->size() == 1) return mine;
  std::vector<EvalTotals> all(static_cast<size_t>(comm->size()));
  all_gather_host(*comm, &mine, all.data(), sizeof(EvalTotals));
  EvalTotals sum;
  for (const EvalTotals& t : all) {  // rank order: the same sum on every rank
    sum.loss_sum += t.loss_sum;
    sum.top1 += t.top1;
    sum.top5 += t.top5;
    sum.count += t.count;
  }
  return sum;
}

EvalResult evaluate_set(const EvalReader& read, const EvalLogits& logits, int64_t total, int64_t image_numel,
                    int64_t classes, int64_t batch, Communicator* comm, int rank, int world) {
  const auto [begin, end] = eval_shard(total, rank, world);
  std::vector<float> images(static_cast<size_t>(batch * image_numel));
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  EvalTotals mine;
  for (int64_t first = begin; first < end; first += batch) {
    const int64_t count = std::min(batch, end - first);
    read(first, count, images.data(), labels.data());
    const std::vector<float> out = logits(images.data(), count);
    accumulate_eval(out.data(), labels.data(), count, classes, mine);
  }
  EvalResult result = finish_eval(sum_over_ranks(comm, mine));
  result.classes = classes;
  return result;
}

}  // namespace ddpx
