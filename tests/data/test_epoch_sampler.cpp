// DistributedSampler semantics: every epoch covers every sample once across ranks (up to the padding), every rank
// runs the same number of batches, the order depends on (seed, epoch) only, W ranks x b equal 1 rank x W*b.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "data/epoch_sampler.hpp"
#include "error_expect.hpp"

namespace ddpx {
namespace {

std::vector<SamplePick> picks(const EpochSampler& sampler, int64_t micro, int rank, int64_t batch) {
  std::vector<SamplePick> out(static_cast<size_t>(batch));
  sampler.pick(micro, rank, out.data());
  return out;
}

TEST(EpochSampler, EachEpochCoversEverySampleOnceUpToPaddingWithEqualBatchCounts) {
  for (const auto& [samples, world, batch] : std::vector<std::tuple<int64_t, int, int64_t>>{
           {100, 3, 4}, {101, 4, 5}, {7, 2, 3}, {64, 8, 2}, {10, 1, 10}}) {
    const EpochSampler sampler(samples, world, batch, 11, true, "test");
    const int64_t share = (samples + world - 1) / world;
    EXPECT_EQ(sampler.share(), share);
    EXPECT_EQ(sampler.batches_per_epoch(), share / batch) << samples << " " << world << " " << batch;
    for (int64_t epoch = 0; epoch < 2; ++epoch) {
      std::map<int64_t, int> seen;
      std::set<int64_t> positions;
      for (int rank = 0; rank < world; ++rank)
        for (int64_t k = 0; k < sampler.batches_per_epoch(); ++k)
          for (const SamplePick& p : picks(sampler, epoch * sampler.batches_per_epoch() + k, rank, batch)) {
            EXPECT_EQ(p.epoch, epoch);
            EXPECT_TRUE(positions.insert(p.position).second) << "position twice: " << p.position;
            ++seen[p.index];
          }
      // Taken: W * B * b positions of the padded order; the dropped tail of each share is the rest.
      const int64_t taken = world * sampler.batches_per_epoch() * batch;
      int64_t total = 0;
      for (const auto& [index, count] : seen) {
        EXPECT_TRUE(index >= 0 && index < samples);
        EXPECT_LE(count, 1 + (world * share - samples + samples - 1) / samples);  // repeats only from padding
        total += count;
      }
      EXPECT_EQ(total, taken);
      if (taken >= samples) EXPECT_EQ(static_cast<int64_t>(seen.size()), samples);  // nothing dropped: all covered
    }
  }
}

TEST(EpochSampler, OrderDependsOnSeedAndEpochOnly) {
  const EpochSampler a(1000, 2, 8, 5, true, "a"), b(1000, 4, 3, 5, true, "b"), c(1000, 2, 8, 6, true, "c");
  EXPECT_EQ(a.order(0), b.order(0));  // world and batch do not change the epoch's order
  EXPECT_NE(a.order(0), a.order(1));  // another order the next epoch
  EXPECT_NE(a.order(0), c.order(0));  // another seed, another order
  std::vector<int64_t> sorted = a.order(3);
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i) EXPECT_EQ(sorted[static_cast<size_t>(i)], i);
  const EpochSampler plain(10, 1, 10, 5, false, "plain");
  EXPECT_EQ(plain.order(4), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(EpochSampler, WorldRanksOfBatchBEqualOneRankOfWorldTimesB) {
  const int64_t batch = 3;
  const EpochSampler two(60, 2, batch, 9, true, "two"), one(60, 1, 2 * batch, 9, true, "one");
  EXPECT_EQ(two.batches_per_epoch(), one.batches_per_epoch());
  for (int64_t micro = 0; micro < 25; ++micro) {  // crosses epoch ends (10 batches per epoch)
    std::multiset<std::pair<int64_t, int64_t>> split, whole;
    for (int rank = 0; rank < 2; ++rank)
      for (const SamplePick& p : picks(two, micro, rank, batch)) split.insert({p.index, p.position});
    for (const SamplePick& p : picks(one, micro, 0, 2 * batch)) whole.insert({p.index, p.position});
    EXPECT_EQ(split, whole) << "micro-batch " << micro;
  }
}

TEST(EpochSampler, TooLargeABatchIsRefusedNamingBatch) {
  testing::expect_error([] { EpochSampler(10, 4, 4, 0, true, "--data idx:/d:train"); },
                        {"--data idx:/d:train", "10 samples over 4 rank(s) give each rank 3", "lower --batch to 3"});
}

}  // namespace
}  // namespace ddpx
