// Softmax cross-entropy with label smoothing and mixed (mixup/cutmix) targets against
// torch.nn.functional.cross_entropy in float64 (tests/fixtures/recipe_torch.json). Tolerance: both sides compute in
// double; 1e-12 absolute on the loss and each gradient entry (values of order 1).
#include <gtest/gtest.h>

#include "error_expect.hpp"
#include "model/cross_entropy.hpp"
#include "recipe_fixture.hpp"

namespace ddpx {
namespace {

using testing::as_vector;
using testing::recipe_fixture;

TEST(SoftTargets, MatchTorchCrossEntropyWithLabelSmoothingAndMixedTargets) {
  const auto& ce = recipe_fixture()["cross_entropy"];
  const int64_t batch = ce["batch"], classes = ce["classes"];
  const auto logits = as_vector<double>(ce["logits"]);
  const auto labels = as_vector<int32_t>(ce["labels"]);
  const auto partners = as_vector<int32_t>(ce["partner_labels"]);
  ASSERT_EQ(ce["cases"].size(), 5u);
  for (const auto& c : ce["cases"]) {
    ClassTargets targets{.labels = labels.data(), .label_smoothing = c["smoothing"].get<double>()};
    if (c["kind"] == "mixed") targets.mixed_labels = partners.data(), targets.mix = c["mix"].get<double>();
    std::vector<double> grad(logits.size());
    const double loss = softmax_cross_entropy<double>(logits.data(), targets, batch, classes, grad.data());
    EXPECT_NEAR(loss, c["loss"].get<double>(), 1e-12) << c["kind"] << " smoothing " << c["smoothing"];
    const auto expected = as_vector<double>(c["grad"]);
    for (size_t i = 0; i < grad.size(); ++i) EXPECT_NEAR(grad[i], expected[i], 1e-12) << i;
  }
}

TEST(SoftTargets, PlainTargetsEqualTheIndexLossBitForBit) {
  const auto& ce = recipe_fixture()["cross_entropy"];
  const int64_t batch = ce["batch"], classes = ce["classes"];
  const auto logits64 = as_vector<double>(ce["logits"]);
  const std::vector<float> logits(logits64.begin(), logits64.end());
  const auto labels = as_vector<int32_t>(ce["labels"]);
  std::vector<float> plain(logits.size()), soft(logits.size());
  const float a = softmax_cross_entropy<float>(logits.data(), labels.data(), batch, classes, plain.data(), 0.5f);
  const float b = softmax_cross_entropy<float>(logits.data(), ClassTargets{.labels = labels.data()}, batch, classes,
                                               soft.data(), 0.5f);
  EXPECT_FLOAT_EQ(a, b);
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_NEAR(plain[i], soft[i], 1e-8) << i;
  std::vector<int32_t> bad = labels;
  bad[2] = static_cast<int32_t>(classes);
  testing::expect_error(
      [&] { softmax_cross_entropy<float>(logits.data(), ClassTargets{.labels = bad.data()}, batch, classes, nullptr); },
      {"label 5 at batch index 2"});
}

}  // namespace
}  // namespace ddpx
