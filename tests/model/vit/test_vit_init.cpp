// init_vit_params: torchvision's zeros and ones where torchvision puts them, the distributions' spreads and bounds,
// untouched padding, determinism per seed; init_vit_params_random: every tensor non-zero.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "model/vit/vit_layout.hpp"
#include "model/vit/vit_init.hpp"

namespace ddpx {
namespace {

struct Stats {
  double mean = 0, std = 0, max_abs = 0;
  size_t zeros = 0;
};

Stats stats_of(const std::vector<float>& params, const TensorSlot& slot) {
  Stats s;
  double sum = 0, sum_sq = 0;
  for (size_t i = slot.offset; i < slot.offset + slot.numel; ++i) {
    sum += params[i];
    sum_sq += static_cast<double>(params[i]) * params[i];
    s.max_abs = std::max(s.max_abs, std::abs(static_cast<double>(params[i])));
    s.zeros += params[i] == 0.0f;
  }
  const double n = static_cast<double>(slot.numel);
  s.mean = sum / n;
  s.std = std::sqrt(std::max(0.0, sum_sq / n - s.mean * s.mean));
  return s;
}

bool all_equal(const std::vector<float>& params, const TensorSlot& slot, float value) {
  return std::all_of(params.begin() + slot.offset, params.begin() + slot.offset + slot.numel,
                     [&](float v) { return v == value; });
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Big enough that every tensor's spread is estimated within a few percent (>= 2304 samples per weight tensor).
constexpr const char* kSpec = "custom:image=64,patch=16,layers=2,hidden=96,heads=4,mlp=384,classes=10";

TEST(InitVitParams, FollowsTorchvisionTensorByTensor) {
  const VitLayout layout(parse_vit_spec(kSpec));
  const int64_t D = 96, M = 384;
  std::vector<float> params(layout.buffer_size(), 7.0f);  // 7 everywhere: padding must come back 0
  init_vit_params(layout, params.data(), 1234);

  // Sample std of n values is within ~ 1/sqrt(2n) <= 1.5% of the true one (n >= 2304); 10% is > 6 sigma.
  auto expect_std = [](const Stats& s, double expected, const std::string& name) {
    EXPECT_NEAR(s.std, expected, 0.1 * expected) << name;
    EXPECT_NEAR(s.mean, 0.0, 0.1 * expected) << name;
  };
  for (const TensorSlot& slot : layout.tensors()) {
    const std::string& name = slot.name;
    const Stats s = stats_of(params, slot);
    if (name == "conv_proj.weight") {
      expect_std(s, std::sqrt(1.0 / (3 * 16 * 16)), name);
    } else if (name == "encoder.pos_embedding") {
      expect_std(s, 0.02, name);
    } else if (name == "conv_proj.bias" || name == "class_token" || name == "heads.head.weight" ||
               name == "heads.head.bias" || ends_with(name, "in_proj_bias") || ends_with(name, "out_proj.bias") ||
               ends_with(name, "ln.bias") || ends_with(name, "ln_1.bias") || ends_with(name, "ln_2.bias")) {
      EXPECT_TRUE(all_equal(params, slot, 0.0f)) << name << " should be all zeros";
    } else if (ends_with(name, "ln.weight") || ends_with(name, "ln_1.weight") || ends_with(name, "ln_2.weight")) {
      EXPECT_TRUE(all_equal(params, slot, 1.0f)) << name << " should be all ones";
    } else if (ends_with(name, "in_proj_weight")) {  // xavier over [3D, D]: bound sqrt(6 / (D + 3D))
      const double bound = std::sqrt(6.0 / (4 * D));
      EXPECT_LE(s.max_abs, bound) << name;
      expect_std(s, bound / std::sqrt(3.0), name);
    } else if (ends_with(name, "out_proj.weight")) {  // nn.Linear default: U(-1/sqrt(D), 1/sqrt(D))
      const double bound = 1.0 / std::sqrt(static_cast<double>(D));
      EXPECT_LE(s.max_abs, bound) << name;
      expect_std(s, bound / std::sqrt(3.0), name);
    } else if (ends_with(name, "mlp.0.weight") || ends_with(name, "mlp.3.weight")) {
      const double bound = std::sqrt(6.0 / (D + M));
      EXPECT_LE(s.max_abs, bound) << name;
      expect_std(s, bound / std::sqrt(3.0), name);
    } else if (ends_with(name, "mlp.0.bias") || ends_with(name, "mlp.3.bias")) {
      EXPECT_EQ(s.zeros, 0u) << name;          // normal(std=1e-6): tiny but not zero
      EXPECT_LT(s.max_abs, 6e-6) << name;      // 6 sigma over <= 384 values
      EXPECT_GT(s.std, 0.5e-6) << name;
    } else {
      ADD_FAILURE() << "test has no expectation for tensor " << name;
    }
  }
  std::vector<bool> is_param(layout.buffer_size(), false);
  for (const TensorSlot& slot : layout.tensors())
    std::fill(is_param.begin() + slot.offset, is_param.begin() + slot.offset + slot.numel, true);
  for (size_t i = 0; i < params.size(); ++i)
    if (!is_param[i]) {
      ASSERT_EQ(params[i], 0.0f) << "padding element " << i;
    }
}

TEST(InitVitParams, SameSeedSameValuesOtherSeedOtherValues) {
  const VitLayout layout(parse_vit_spec("vit_tiny_test"));
  std::vector<float> a(layout.buffer_size()), b(layout.buffer_size()), c(layout.buffer_size());
  init_vit_params(layout, a.data(), 5);
  init_vit_params(layout, b.data(), 5);
  init_vit_params(layout, c.data(), 6);
  EXPECT_EQ(a, b);
  const TensorSlot& pos = layout.at("encoder.pos_embedding");
  EXPECT_FALSE(std::equal(a.begin() + pos.offset, a.begin() + pos.offset + pos.numel, c.begin() + pos.offset));
  // A tensor's values depend on (seed, name) only: the same block in a deeper model draws the same numbers.
  const VitLayout deeper(parse_vit_spec("vit_tiny_test:layers=3"));
  std::vector<float> d(deeper.buffer_size());
  init_vit_params(deeper, d.data(), 5);
  const TensorSlot& w = layout.at("encoder.layers.encoder_layer_1.mlp.0.weight");
  const TensorSlot& w_deeper = deeper.at("encoder.layers.encoder_layer_1.mlp.0.weight");
  EXPECT_TRUE(std::equal(a.begin() + w.offset, a.begin() + w.offset + w.numel, d.begin() + w_deeper.offset));
}

TEST(InitVitParamsRandom, EveryTensorNonZeroAndLayerNormWeightsNearOne) {
  const VitLayout layout(parse_vit_spec("vit_tiny_test"));
  std::vector<float> params(layout.buffer_size(), 7.0f);
  init_vit_params_random(layout, params.data(), 9, 0.1f);
  for (const TensorSlot& slot : layout.tensors()) {
    const Stats s = stats_of(params, slot);
    EXPECT_EQ(s.zeros, 0u) << slot.name;
    EXPECT_GT(s.std, 0.03) << slot.name;  // N(0, 0.1^2): the sample std of >= 10 values is far above 0.03
    EXPECT_LT(s.std, 0.2) << slot.name;
    const bool norm_weight = ends_with(slot.name, "ln.weight") || ends_with(slot.name, "ln_1.weight") ||
                             ends_with(slot.name, "ln_2.weight");
    EXPECT_NEAR(s.mean, norm_weight ? 1.0 : 0.0, 0.1) << slot.name;
  }
}

}  // namespace
}  // namespace ddpx
