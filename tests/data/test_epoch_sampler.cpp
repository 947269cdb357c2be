// DistributedSampler semantics: every epoch covers every sample once across ranks (up to the padding), every rank
// runs the same number of batches, the order depends on (seed, epoch) only, W ranks x b equal 1 rank x W*b; grouped
// samples (wds shards) pass through WebDataset's shuffle buffer (Note [Shuffle buffer]).
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

// The stream order of a grouped epoch: the groups in the order the unbuffered sampler takes them, each front to back.
std::vector<int64_t> stream_order(int64_t samples, uint64_t seed, const std::vector<int64_t>& groups, int64_t epoch) {
  return EpochSampler(samples, 1, 1, seed, true, "stream", groups).order(epoch);
}

// Note [Shuffle buffer]: with n slots, the sample at stream position p is output at position p - n + 1 at the
// earliest (it takes a slot as output p - n leaves) and every output before the stream's end is one the buffer
// held; n >= the epoch is a full shuffle, 0 and 1 keep the stream's order; the order is still (seed, epoch)'s alone.
TEST(EpochSampler, AShuffleBufferMixesSamplesAsWebDatasetsShuffleDoes) {
  const std::vector<int64_t> groups = {300, 500, 200};  // three shards of 1,000 samples
  for (const int64_t n : {int64_t{10}, int64_t{100}, int64_t{1000}, int64_t{5000}}) {
    const EpochSampler sampler(1000, 2, 8, 7, true, "wds", groups, n);
    for (int64_t epoch = 0; epoch < 3; ++epoch) {
      const std::vector<int64_t> order = sampler.order(epoch), stream = stream_order(1000, 7, groups, epoch);
      std::vector<int64_t> stream_position(1000);
      for (size_t p = 0; p < stream.size(); ++p) stream_position[static_cast<size_t>(stream[p])] = int64_t(p);
      std::vector<int64_t> sorted = order;
      std::sort(sorted.begin(), sorted.end());
      for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(sorted[static_cast<size_t>(i)], i) << "not a permutation, n " << n;
      int64_t moved = 0, farthest_ahead = 0;
      for (size_t k = 0; k < order.size(); ++k) {
        const int64_t p = stream_position[static_cast<size_t>(order[k])];
        EXPECT_LE(p, int64_t(k) + n - 1) << "output " << k << " comes from past the buffer, n " << n;
        farthest_ahead = std::max(farthest_ahead, p - int64_t(k));
        moved += p != int64_t(k) ? 1 : 0;
      }
      EXPECT_GT(moved, 900) << "the buffer left the stream's order, n " << n;
      if (n < 1000) EXPECT_EQ(farthest_ahead, n - 1) << "the buffer is not n samples deep";
      EXPECT_EQ(order, EpochSampler(1000, 4, 3, 7, true, "again", groups, n).order(epoch));  // (seed, epoch) only
    }
    EXPECT_NE(sampler.order(0), sampler.order(1));
  }
  // Off (0 or 1): the shards' stored order, shard by shard, as before the buffer.
  for (const int64_t n : {int64_t{0}, int64_t{1}})
    EXPECT_EQ(EpochSampler(1000, 1, 1, 7, true, "off", groups, n).order(2), stream_order(1000, 7, groups, 2));
  // A class-sorted shard of 10 classes x 600: with a buffer of the whole shard, every class is spread over the
  // epoch (its first third holds about a third of each class); without one, the first third is classes 0-3.
  const auto first_third_classes = [](const std::vector<int64_t>& order) {
    std::set<int64_t> classes;
    for (size_t k = 0; k < order.size() / 3; ++k) classes.insert(order[k] / 600);
    return classes.size();
  };
  EXPECT_EQ(first_third_classes(EpochSampler(6000, 1, 1, 3, true, "sorted", {6000}, 6000).order(0)), 10u);
  EXPECT_EQ(first_third_classes(EpochSampler(6000, 1, 1, 3, true, "sorted", {6000}, 0).order(0)), 4u);
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
