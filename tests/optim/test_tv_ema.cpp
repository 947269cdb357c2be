// The weight average on torchvision's cadence against torch (tests/fixtures/tv_recipe_torch.json from
// tools/make_tv_recipe_fixtures.py): AveragedModel with ExponentialMovingAverage's avg_fn, its decay adjusted as
// train.py adjusts it, updated after batch i of an epoch when i % every == 0 and restarted (n_averaged = 0) after
// each update of the first copy epochs; ddpx's WeightAverage on EmaCadence equal after every optimizer step (fp32,
// the same operations: exact), and the adjusted decay equal to Python's double.
#include <gtest/gtest.h>

#include "error_expect.hpp"
#include "optim/ema_cadence.hpp"
#include "optim/weight_average.hpp"
#include "tv_recipe_fixture.hpp"

namespace ddpx {
namespace {

using testing::expect_error;
using testing::tv_recipe_fixture;

TEST(TorchvisionEma, AveragedModelOnTrainPysCadenceEveryStep) {
  const auto& cases = tv_recipe_fixture()["ema"];
  ASSERT_EQ(cases.size(), 3u);
  for (const auto& c : cases) {
    const double decay = torchvision_ema_decay(c["decay_flag"], c["world"], c["batch"], c["every"], c["epochs"]);
    EXPECT_EQ(decay, c["decay_used"].get<double>());
    const EmaCadence cadence{.every = c["every"], .copy_epochs = c["copy_epochs"], .micro_batches_per_step = 1,
                             .micro_batches_per_epoch = c["steps_per_epoch"]};
    const auto weights = c["weights"].get<std::vector<std::vector<float>>>();
    const auto averages = c["averages"].get<std::vector<std::vector<float>>>();
    const auto updated = c["updated"].get<std::vector<bool>>();
    WeightAverage average(decay, weights[0].size());
    for (size_t s = 0; s < weights.size(); ++s) {
      const int64_t step = static_cast<int64_t>(s) + 1;
      EXPECT_EQ(cadence.updates_at(step), updated[s]) << "step " << step;
      if (cadence.updates_at(step)) {
        average.update(weights[s].data(), weights[s].size());
        if (cadence.copies_at(step)) average.restart();
      }
      // Step 1 always updates (batch 0), so from there the average is defined on both sides.
      EXPECT_EQ(average.values(), averages[s]) << "step " << step << " every " << cadence.every;
    }
  }
}

TEST(TorchvisionEma, CadenceCountsWithinEpochsOrTheRunsSteps) {
  // No epochs: the run's steps 1, 4, 7, ... (0-based 0, 3, 6).
  const EmaCadence endless{.every = 3};
  EXPECT_TRUE(endless.updates_at(1));
  EXPECT_FALSE(endless.updates_at(2));
  EXPECT_TRUE(endless.updates_at(4));
  EXPECT_FALSE(endless.copies_at(1));
  // 5 micro-batches an epoch, 2 a step: epoch 0 holds steps 1-3, epoch 1 steps 4-5 (first micro-batches 6, 8),
  // epoch 2 steps 6-8 (10, 12, 14): every 2 updates at indices 0 and 2 of each.
  const EmaCadence accum{.every = 2, .copy_epochs = 1, .micro_batches_per_step = 2, .micro_batches_per_epoch = 5};
  const std::vector<bool> expected{true, false, true, true, false, true, false, true};
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(accum.updates_at(static_cast<int64_t>(i) + 1), expected[i]);
  EXPECT_TRUE(accum.copies_at(3));
  EXPECT_FALSE(accum.copies_at(4));
  EXPECT_TRUE(EmaCadence{}.every_step());
  EXPECT_FALSE(accum.every_step());
  // ViT-B/16's recipe: D 0.99998, 8 ranks x 512, every 32, 300 epochs.
  EXPECT_NEAR(torchvision_ema_decay(0.99998, 8, 512, 32, 300), 1 - 2e-5 * 8 * 512 * 32 / 300, 1e-12);
  EXPECT_EQ(torchvision_ema_decay(0.9, 4, 64, 1, 1), 0.0);  // (1 - D) x adjust above 1: the weights themselves
}

TEST(TorchvisionEma, BadValuesNameTheFlag) {
  expect_error([] { EmaCadence{.every = 0}.validate(); }, {"--ema-every 0"});
  expect_error([] { EmaCadence{.copy_epochs = -1}.validate(); }, {"--ema-copy-epochs -1"});
  expect_error([] { parse_ema_adjust("timm"); }, {"--ema-adjust 'timm'", "none", "torchvision"});
  EXPECT_EQ(parse_ema_adjust("torchvision"), EmaAdjust::torchvision);
  WeightAverage zero(0.0, 2);  // the adjusted decay may be 0
  const float w[2] = {1, 2};
  zero.update(w, 2);
  zero.update(w, 2);
  EXPECT_EQ(zero.values(), (std::vector<float>{1, 2}));
}

}  // namespace
}  // namespace ddpx
