// torchvision's repeated-augmentation sampler (Note [Repeated augmentation], data/epoch_sampler.hpp) against torch
// (tests/fixtures/tv_recipe_torch.json from tools/make_tv_recipe_fixtures.py): torch.randperm's CPU draw bit for bit
// for several lengths and seeds, and the indices each rank takes per epoch equal to RASampler's for 1, 2 and 4
// ranks, several lengths, repetitions, seeds and epochs; each copy of a sample at its own position (its own
// augmentation); batches as a pure function of the micro-batch (what --resume relies on); bad sizes named.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "data/epoch_sampler.hpp"
#include "data/torch_randperm.hpp"
#include "error_expect.hpp"
#include "tv_recipe_fixture.hpp"

namespace ddpx {
namespace {

using testing::expect_error;
using testing::tv_recipe_fixture;

TEST(TorchRandperm, EqualsTorchForEveryLengthAndSeed) {
  const auto& cases = tv_recipe_fixture()["randperm"];
  ASSERT_EQ(cases.size(), 28u);
  for (const auto& c : cases)
    EXPECT_EQ(torch_randperm(c["n"], c["seed"]), c["perm"].get<std::vector<int64_t>>())
        << "n " << c["n"] << " seed " << c["seed"];
  EXPECT_TRUE(torch_randperm(0, 1).empty());
  expect_error([] { torch_randperm(kTorchRandpermMax, 0); }, {"supported below"});
}

TEST(RepeatedAugment, EachRanksEpochIsRaSamplersForOneTwoAndFourRanks) {
  const auto& cases = tv_recipe_fixture()["ra_sampler"];
  ASSERT_EQ(cases.size(), 36u);
  for (const auto& c : cases) {
    const int world = c["world"];
    const int64_t n = c["n"], epoch = c["epoch"];
    // batch 1: micro-batch k of the epoch is the rank's k-th index
    const EpochSampler sampler(n, world, 1, c["seed"], true, "test", {}, 0, c["reps"]);
    const int64_t per_epoch = sampler.batches_per_epoch();
    std::set<int64_t> positions;
    for (int rank = 0; rank < world; ++rank) {
      const auto expected = c["ranks"][rank].get<std::vector<int64_t>>();
      ASSERT_EQ(per_epoch, static_cast<int64_t>(expected.size()));
      std::vector<int64_t> got;
      for (int64_t k = 0; k < per_epoch; ++k) {
        SamplePick pick;
        sampler.pick(epoch * per_epoch + k, rank, &pick);
        EXPECT_EQ(pick.epoch, epoch);
        EXPECT_TRUE(positions.insert(pick.position).second) << "a position twice: " << pick.position;
        got.push_back(pick.index);
      }
      EXPECT_EQ(got, expected) << "n " << n << " reps " << c["reps"] << " world " << world << " rank " << rank
                               << " seed " << c["seed"] << " epoch " << epoch;
    }
  }
}

TEST(RepeatedAugment, BatchesAreAPureFunctionOfTheMicroBatchAndCopiesDiffer) {
  const EpochSampler a(600, 2, 8, 5, true, "test", {}, 0, 3), b(600, 2, 8, 5, true, "test", {}, 0, 3);
  EXPECT_EQ(a.batches_per_epoch(), 512 / 2 / 8);
  std::vector<SamplePick> first(8), again(8);
  a.pick(37, 1, first.data());  // a resumed run asks for micro-batch 37 first
  for (int64_t m = 0; m <= 37; ++m) b.pick(m, 1, again.data());
  for (size_t t = 0; t < 8; ++t) {
    EXPECT_EQ(first[t].index, again[t].index);
    EXPECT_EQ(first[t].position, again[t].position);
  }
  // Consecutive copies of one sample land on ranks 0, 1, 0 at positions 0, 1, 2: three augmentation keys.
  SamplePick r0, r1;
  const EpochSampler one(600, 2, 1, 5, true, "test", {}, 0, 3);
  one.pick(0, 0, &r0);
  one.pick(0, 1, &r1);
  EXPECT_EQ(r0.index, r1.index);
  EXPECT_NE(r0.position, r1.position);
}

TEST(RepeatedAugment, TooLittleDataForTheBatchNamesTheFlag) {
  expect_error([] { EpochSampler(255, 1, 1, 0, true, "--data idx:x", {}, 0, 3); },
               {"--repeated-augment 3", "--data idx:x", "255 samples", "at least 256 samples per rank"});
  expect_error([] { EpochSampler(600, 2, 300, 0, true, "--data idx:x", {}, 0, 2); },
               {"--repeated-augment 2", "256 per rank", "--batch of 300", "lower --batch to 256"});
  EXPECT_EQ(EpochSampler(600, 2, 256, 0, true, "--data idx:x", {}, 0, 2).batches_per_epoch(), 1);
}

}  // namespace
}  // namespace ddpx
