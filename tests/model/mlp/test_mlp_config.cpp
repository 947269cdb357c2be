// The MLP family's shapes, spec parser, layout and initialization: named shapes and their parameter counts,
// overrides and errors naming the spec, torch.nn.Linear names in backward order with one ready span per layer, and
// torch.nn.Linear's default initialization (bounded by 1/sqrt(fan_in), deterministic per seed, padding zero).
#include <gtest/gtest.h>

#include <cmath>

#include "error_expect.hpp"
#include "model/mlp/mlp_config.hpp"
#include "model/mlp/mlp_init.hpp"
#include "model/mlp/mlp_layout.hpp"

namespace ddpx {
namespace {

TEST(MlpConfig, NamedShapesAndParameterCounts) {
  // sum(p.numel() for p in Mlp(...).parameters()) with tools/make_fixtures.py's module.
  EXPECT_EQ(MlpLayout(parse_mlp_spec("mlp_tiny_test")).num_params(), 768u * 32 + 32 + 32 * 32 + 32 + 32 * 10 + 10);
  EXPECT_EQ(MlpLayout(parse_mlp_spec("mlp_s")).num_params(), 3072u * 1024 + 1024 + 1024 * 1024 + 1024 + 1024 * 10 + 10);
  EXPECT_EQ(MlpLayout(parse_mlp_spec("mlp_l")).num_params(),
            150528u * 2048 + 2048 + 2 * (2048u * 2048 + 2048) + 2048 * 1000 + 1000);
  EXPECT_EQ(parse_mlp_spec("mlp_s").spec(), "mlp_s");
}

TEST(MlpConfig, OverridesAndCustomShapes) {
  const MlpConfig c = parse_mlp_spec("mlp_s:width=64,classes=3");
  EXPECT_EQ(c.width, 64);
  EXPECT_EQ(c.num_classes, 3);
  EXPECT_EQ(c.image_size, 32);
  EXPECT_EQ(c.spec(), "mlp:image=32,channels=3,layers=2,width=64,classes=3");
  EXPECT_EQ(parse_mlp_spec(c.spec()), parse_mlp_spec("mlp:image=32,channels=3,layers=2,width=64,classes=3"));
  EXPECT_EQ(parse_mlp_spec("mlp:layers=1").num_layers, 1);
}

TEST(MlpConfig, BadSpecsNameTheValue) {
  testing::expect_error([] { (void)parse_mlp_spec("mlp_s:width=0"); }, {"width must be positive, got 0"});
  testing::expect_error([] { (void)parse_mlp_spec("mlp_s:depth=3"); }, {"unknown key 'depth'", "width"});
  testing::expect_error([] { (void)parse_mlp_spec("mlp_s:width=x"); }, {"'width=x' is not an integer"});
  testing::expect_error([] { (void)parse_mlp_spec("mlp:width=16777216,layers=4096"); }, {"parameters, beyond"});
  testing::expect_error([] { (void)parse_mlp_spec("mlp:image=1000000"); }, {"features, beyond the supported"});
  testing::expect_error([] { (void)parse_mlp_spec("mlp_xl"); }, {"unknown MLP 'mlp_xl'", "mlp_tiny_test"});
}

TEST(MlpLayout, TorchNamesInBackwardOrderWithOneSpanPerLayer) {
  const MlpLayout layout(parse_mlp_spec("mlp_tiny_test"));
  std::vector<std::string> names;
  for (const TensorSlot& t : layout.tensors()) names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"head.weight", "head.bias", "hidden.1.weight", "hidden.1.bias",
                                             "hidden.0.weight", "hidden.0.bias"}));
  EXPECT_EQ(layout.at("hidden.0.weight").shape, (std::vector<int64_t>{32, 768}));
  EXPECT_EQ(layout.at("head.weight").shape, (std::vector<int64_t>{10, 32}));
  ASSERT_EQ(layout.ready_spans().size(), 3u);
  EXPECT_EQ(layout.ready_spans()[0].begin, layout.head.weight);
  EXPECT_EQ(layout.ready_spans()[0].end, layout.head.bias + 12);  // 10 classes, up to the 4-element granule
  EXPECT_EQ(layout.ready_spans()[1].begin, layout.hidden[1].weight);
  EXPECT_EQ(layout.ready_spans()[2].begin, layout.hidden[0].weight);
  EXPECT_EQ(layout.ready_spans()[2].end, layout.buffer_size());
}

TEST(MlpInit, TorchLinearDefaultBoundsDeterministicAndZeroPadding) {
  const MlpLayout layout(parse_mlp_spec("mlp_tiny_test"));
  std::vector<float> a(layout.buffer_size(), 7.f), b(layout.buffer_size(), -7.f), c(layout.buffer_size());
  init_mlp_params(layout, a.data(), 5);
  init_mlp_params(layout, b.data(), 5);
  init_mlp_params(layout, c.data(), 6);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  std::vector<bool> covered(a.size(), false);
  for (const TensorSlot& t : layout.tensors()) {
    const std::string layer = t.name.substr(0, t.name.rfind('.'));
    const double bound = 1.0 / std::sqrt(static_cast<double>(layout.at(layer + ".weight").shape[1]));
    double max_abs = 0, sum = 0;
    for (size_t i = 0; i < t.numel; ++i) {
      max_abs = std::max(max_abs, std::abs(static_cast<double>(a[t.offset + i])));
      sum += a[t.offset + i];
      covered[t.offset + i] = true;
    }
    EXPECT_LE(max_abs, bound) << t.name;
    EXPECT_GT(max_abs, 0.5 * bound) << t.name << ": a uniform draw should reach near its bound";
    EXPECT_LT(std::abs(sum / static_cast<double>(t.numel)), 0.5 * bound) << t.name;
  }
  for (size_t i = 0; i < a.size(); ++i)
    if (!covered[i]) EXPECT_EQ(a[i], 0.f) << "padding at " << i;
}

}  // namespace
}  // namespace ddpx
