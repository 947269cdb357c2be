// A whole data set's evaluation over the job's ranks; see dataset_eval.hpp.
#include "train/dataset_eval.hpp"

#include <algorithm>

#include "dist/communicator.hpp"
#include "dist/host_collectives.hpp"

namespace ddpx {

DatasetEvaluation evaluate_dataset(const DatasetEvalJob& job) {
  const auto [begin, end] = eval_shard(job.total, job.rank, job.world);
  std::vector<float> images(static_cast<size_t>(job.batch * job.image_numel));
  std::vector<int32_t> labels(static_cast<size_t>(job.batch));
  EvalTotals mine;
  ConfusionMatrix confusion(job.classes);
  std::vector<float> shard_logits;
  if (job.keep_logits) shard_logits.reserve(static_cast<size_t>((end - begin) * job.classes));
  for (int64_t first = begin; first < end; first += job.batch) {
    const int64_t count = std::min(job.batch, end - first);
    job.read(first, count, images.data(), labels.data());
    const std::vector<float> out = job.logits(images.data(), count);
    if (job.labelled) {
      accumulate_eval(out.data(), labels.data(), count, job.classes, mine);  // checks the labels first
      confusion.add(out.data(), labels.data(), count);
    }
    if (job.keep_logits) shard_logits.insert(shard_logits.end(), out.begin(), out.end());
    if (job.progress) job.progress(first + count - begin, end - begin);
  }
  DatasetEvaluation evaluation;
  if (job.labelled) {
    evaluation.result = finish_eval(sum_over_ranks(job.comm, mine));
    evaluation.confusion = sum_over_ranks(job.comm, confusion);
  }
  if (!job.keep_logits) return evaluation;
  if (job.comm == nullptr || job.world == 1) {
    evaluation.logits = std::move(shard_logits);
    return evaluation;
  }
  // Shards differ by at most one sample: each is padded to the largest for one all-gather.
  const int64_t largest = (job.total + job.world - 1) / job.world;
  const size_t per_rank = static_cast<size_t>(largest * job.classes);
  shard_logits.resize(per_rank, 0.f);
  std::vector<float> all(per_rank * static_cast<size_t>(job.world));
  all_gather_host(*job.comm, shard_logits.data(), all.data(), per_rank * sizeof(float));
  if (job.rank != 0) return evaluation;
  evaluation.logits.reserve(static_cast<size_t>(job.total * job.classes));
  for (int r = 0; r < job.world; ++r) {
    const auto [from, to] = eval_shard(job.total, r, job.world);
    const auto start = all.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(r) * per_rank);
    evaluation.logits.insert(evaluation.logits.end(), start, start + (to - from) * job.classes);
  }
  return evaluation;
}

}  // namespace ddpx
