// Mixup and cutmix with fixed draws against torchvision's formulas run in torch (tests/fixtures/recipe_torch.json),
// and the draws' determinism and range. Mixup: the same two fp32 products and sum, so 1 ulp; cutmix: copies, exact.
#include <gtest/gtest.h>

#include "data/batch_mixing.hpp"
#include "error_expect.hpp"
#include "recipe_fixture.hpp"

namespace ddpx {
namespace {

using testing::as_vector;
using testing::recipe_fixture;

TEST(BatchMixing, MixupAndCutmixMatchTorchvisionWithFixedDraws) {
  const auto& mix = recipe_fixture()["mix"];
  const auto shape = as_vector<int64_t>(mix["shape"]);
  const auto labels = as_vector<int32_t>(mix["labels"]);
  std::vector<int32_t> partners(labels.size());
  std::vector<float> images = as_vector<float>(mix["images"]);
  apply_mix(images.data(), labels.data(), partners.data(), shape[0], shape[1], shape[2], shape[3],
            {.kind = MixKind::mixup, .lambda = mix["mixup_lambda"].get<double>()});
  EXPECT_EQ(partners, as_vector<int32_t>(mix["partner_labels"]));
  const auto mixup = as_vector<float>(mix["mixup"]);
  for (size_t i = 0; i < images.size(); ++i) EXPECT_FLOAT_EQ(images[i], mixup[i]) << i;

  const MixDraw draw = cutmix_draw(mix["cutmix_lambda"].get<double>(), mix["cutmix_r_x"].get<int64_t>(),
                                   mix["cutmix_r_y"].get<int64_t>(), shape[2], shape[3]);
  EXPECT_EQ((std::vector<int64_t>{draw.x1, draw.y1, draw.x2, draw.y2}), as_vector<int64_t>(mix["cutmix_box"]));
  EXPECT_DOUBLE_EQ(draw.lambda, mix["cutmix_lambda_adjusted"].get<double>());
  images = as_vector<float>(mix["images"]);
  apply_mix(images.data(), labels.data(), partners.data(), shape[0], shape[1], shape[2], shape[3], draw);
  EXPECT_EQ(images, as_vector<float>(mix["cutmix"]));
}

TEST(BatchMixing, DrawsAreDeterministicAndInRange) {
  MixSettings settings{.mixup_alpha = 0.2, .cutmix_alpha = 1.0};
  Rng a(7), b(7);
  int mixups = 0, cutmixes = 0;
  for (int i = 0; i < 200; ++i) {
    const MixDraw x = draw_mix(a, settings, 28, 28), y = draw_mix(b, settings, 28, 28);
    ASSERT_EQ(x.kind, y.kind);
    ASSERT_EQ(x.lambda, y.lambda);
    ASSERT_GE(x.lambda, 0.0);
    ASSERT_LE(x.lambda, 1.0);
    (x.kind == MixKind::mixup ? mixups : cutmixes)++;
    if (x.kind == MixKind::cutmix) ASSERT_TRUE(x.x1 <= x.x2 && x.x2 <= 28 && x.y1 <= x.y2 && x.y2 <= 28);
  }
  EXPECT_GT(mixups, 60);  // each picked about half the time
  EXPECT_GT(cutmixes, 60);
  double sum = 0;  // Beta(2, 2) has mean 1/2
  Rng c(3);
  for (int i = 0; i < 4000; ++i) sum += sample_beta(c, 2.0);
  EXPECT_NEAR(sum / 4000, 0.5, 0.02);
  EXPECT_EQ(draw_mix(c, MixSettings{}, 4, 4).kind, MixKind::none);
  testing::expect_error([] { MixSettings{.mixup_alpha = -1}.validate(); }, {"--mixup"});
  testing::expect_error([] { MixSettings{.cutmix_alpha = NAN}.validate(); }, {"--cutmix"});
}

}  // namespace
}  // namespace ddpx
