// VitCpu: finite-difference gradients (double) for every parameter tensor, on_ready order and finality, gradient
// accumulation, float vs double agreement, batch independence, and softmax cross-entropy errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "model/vit/vit_layout.hpp"
#include "model/vit/vit_cpu.hpp"
#include "model/vit/vit_init.hpp"

namespace ddpx {
namespace {

constexpr const char* kTinySpec = "custom:image=8,patch=4,layers=2,hidden=8,heads=2,mlp=12,classes=5";

template <typename T>
std::vector<T> random_params(const VitLayout& layout, uint64_t seed, float scale) {
  std::vector<float> values(layout.buffer_size());
  init_vit_params_random(layout, values.data(), seed, scale);
  return std::vector<T>(values.begin(), values.end());
}

template <typename T>
std::vector<T> random_images(const VitConfig& config, int64_t batch, uint64_t seed) {
  Rng rng(seed);
  std::vector<T> images(static_cast<size_t>(batch * config.image_numel()));
  for (T& v : images) v = static_cast<T>(rng.normal());
  return images;
}

std::vector<int32_t> random_labels(const VitConfig& config, int64_t batch, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  for (int32_t& l : labels) l = static_cast<int32_t>(rng.below(static_cast<uint64_t>(config.num_classes)));
  return labels;
}

// Loss and (if grads) its parameter gradients for one batch.
template <typename T>
T loss_and_grads(VitCpu<T>& model, const std::vector<T>& params, const std::vector<T>& images,
                 const std::vector<int32_t>& labels, std::type_identity_t<std::vector<T>>* grads) {
  const int64_t batch = static_cast<int64_t>(labels.size());
  const int64_t classes = model.layout().config().num_classes;
  std::vector<T> logits(static_cast<size_t>(batch * classes)), dlogits(logits.size());
  model.forward(params.data(), images.data(), batch, logits.data());
  const T loss = softmax_cross_entropy(logits.data(), labels.data(), batch, classes, dlogits.data());
  if (grads != nullptr) {
    grads->assign(params.size(), T(0));
    model.backward(params.data(), dlogits.data(), grads->data());
  }
  return loss;
}

TEST(VitCpu, FiniteDifferenceGradientsOfEveryTensor) {
  const VitLayout layout(parse_vit_spec(kTinySpec));
  const int64_t batch = 3;
  VitCpu<double> model(layout, batch);
  std::vector<double> params = random_params<double>(layout, 11, 0.5f);
  const auto images = random_images<double>(layout.config(), batch, 12);
  const auto labels = random_labels(layout.config(), batch, 13);
  std::vector<double> grads;
  loss_and_grads(model, params, images, labels, &grads);

  // Central differences with h = 1e-5: truncation error ~h^2 * f''' ~ 1e-10, rounding ~1e-16 / h ~ 1e-11, so
  // agreement to 1e-6 relative (plus 1e-9 absolute for near-zero entries) separates right from wrong gradients.
  const double h = 1e-5;
  for (const TensorSlot& slot : layout.tensors()) {
    double worst = 0, norm = 0;
    for (size_t i = 0; i < slot.numel; ++i) {
      const size_t at = slot.offset + i;
      const double saved = params[at];
      params[at] = saved + h;
      const double plus = loss_and_grads(model, params, images, labels, nullptr);
      params[at] = saved - h;
      const double minus = loss_and_grads(model, params, images, labels, nullptr);
      params[at] = saved;
      const double numeric = (plus - minus) / (2 * h);
      const double err = std::abs(numeric - grads[at]) / (1e-6 * std::max(std::abs(numeric), std::abs(grads[at])) + 1e-9);
      worst = std::max(worst, err);
      norm += grads[at] * grads[at];
    }
    EXPECT_LE(worst, 1.0) << slot.name << ": worst |numeric - analytic| in units of the tolerance";
    EXPECT_GT(norm, 0.0) << slot.name << " has an all-zero gradient; the check would be vacuous";
  }
}

TEST(VitCpu, OnReadySpansInBackwardOrderAreFinalAndCoverEveryTensor) {
  const VitLayout layout(parse_vit_spec(kTinySpec));
  const int64_t batch = 2;
  VitCpu<double> model(layout, batch);
  const auto params = random_params<double>(layout, 21, 0.5f);
  const auto images = random_images<double>(layout.config(), batch, 22);
  const auto labels = random_labels(layout.config(), batch, 23);
  std::vector<double> logits(static_cast<size_t>(batch * layout.config().num_classes)), dlogits(logits.size());
  model.forward(params.data(), images.data(), batch, logits.data());
  softmax_cross_entropy(logits.data(), labels.data(), batch, layout.config().num_classes, dlogits.data());

  struct Span {
    size_t begin, end;
    std::vector<double> values;  // the gradient inside the span when it was reported
  };
  std::vector<Span> spans;
  std::vector<double> grads(layout.buffer_size(), 0.0);
  model.backward(params.data(), dlogits.data(), grads.data(), [&](size_t begin, size_t end) {
    spans.push_back({begin, end, std::vector<double>(grads.begin() + begin, grads.begin() + end)});
  });

  std::vector<std::pair<size_t, size_t>> expected = {{0, layout.head_end}};
  for (size_t i = layout.blocks.size(); i-- > 0;) expected.emplace_back(layout.blocks[i].begin, layout.blocks[i].end);
  expected.emplace_back(layout.embedding_begin, layout.buffer_size());
  ASSERT_EQ(spans.size(), expected.size());
  for (size_t i = 0; i < spans.size(); ++i) {
    EXPECT_EQ(spans[i].begin, expected[i].first) << "span " << i;
    EXPECT_EQ(spans[i].end, expected[i].second) << "span " << i;
    if (i > 0) {
      EXPECT_GE(spans[i].begin, spans[i - 1].end) << "spans overlap or go backwards at " << i;
    }
    // Final when reported: nothing later in backward changed it.
    for (size_t k = 0; k < spans[i].values.size(); ++k)
      ASSERT_EQ(spans[i].values[k], grads[spans[i].begin + k]) << "span " << i << " changed after on_ready";
  }
  // Every tensor lies inside exactly one span; everything outside tensors (padding) is still zero.
  std::vector<bool> is_param(layout.buffer_size(), false);
  for (const TensorSlot& slot : layout.tensors()) {
    int inside = 0;
    for (const Span& s : spans) inside += slot.offset >= s.begin && slot.offset + slot.numel <= s.end;
    EXPECT_EQ(inside, 1) << slot.name;
    std::fill(is_param.begin() + slot.offset, is_param.begin() + slot.offset + slot.numel, true);
  }
  for (size_t i = 0; i < grads.size(); ++i)
    if (!is_param[i]) {
      ASSERT_EQ(grads[i], 0.0) << "padding element " << i << " was written";
    }
}

TEST(VitCpu, BackwardAccumulatesIntoGrads) {
  const VitLayout layout(parse_vit_spec(kTinySpec));
  VitCpu<double> model(layout, 2);
  const auto params = random_params<double>(layout, 31, 0.5f);
  const auto images = random_images<double>(layout.config(), 2, 32);
  const auto labels = random_labels(layout.config(), 2, 33);
  std::vector<double> once;
  loss_and_grads(model, params, images, labels, &once);
  std::vector<double> logits(10), dlogits(10), twice(layout.buffer_size(), 0.0);
  for (int i = 0; i < 2; ++i) {
    model.forward(params.data(), images.data(), 2, logits.data());
    softmax_cross_entropy(logits.data(), labels.data(), 2, 5, dlogits.data());
    model.backward(params.data(), dlogits.data(), twice.data());
  }
  for (size_t i = 0; i < once.size(); ++i) ASSERT_DOUBLE_EQ(twice[i], 2 * once[i]) << "element " << i;
}

TEST(VitCpu, EachImageIsIndependentOfTheRestOfTheBatch) {
  const VitLayout layout(parse_vit_spec("vit_tiny_test"));
  const VitConfig& c = layout.config();
  const int64_t batch = 3;
  VitCpu<double> model(layout, batch);
  const auto params = random_params<double>(layout, 41, 0.3f);
  const auto images = random_images<double>(c, batch, 42);
  std::vector<double> together(static_cast<size_t>(batch * c.num_classes)), alone(static_cast<size_t>(c.num_classes));
  model.forward(params.data(), images.data(), batch, together.data());
  for (int64_t b = 0; b < batch; ++b) {
    model.forward(params.data(), images.data() + b * c.image_numel(), 1, alone.data());
    for (int64_t j = 0; j < c.num_classes; ++j)  // 1e-12: only summation order inside BLAS may differ
      EXPECT_NEAR(alone[j], together[b * c.num_classes + j], 1e-12) << "image " << b << " class " << j;
  }
}

TEST(VitCpu, FloatAgreesWithDouble) {
  const VitLayout layout(parse_vit_spec("vit_tiny_test"));
  const VitConfig& c = layout.config();
  const int64_t batch = 4;
  VitCpu<float> model_f(layout, batch);
  VitCpu<double> model_d(layout, batch);
  const auto images_d = random_images<double>(c, batch, 52);
  const std::vector<float> images_f(images_d.begin(), images_d.end());
  const auto labels = random_labels(c, batch, 53);
  std::vector<float> grads_f;
  std::vector<double> grads_d;
  const float loss_f = loss_and_grads(model_f, random_params<float>(layout, 51, 0.3f), images_f, labels, &grads_f);
  const double loss_d = loss_and_grads(model_d, random_params<double>(layout, 51, 0.3f), images_d, labels, &grads_d);
  EXPECT_NEAR(loss_f, loss_d, 1e-5 * std::abs(loss_d));  // float32 rounding through 2 blocks: ~1e-6 relative
  for (const TensorSlot& slot : layout.tensors()) {
    double diff = 0, norm = 0;
    for (size_t i = slot.offset; i < slot.offset + slot.numel; ++i) {
      diff += (grads_f[i] - grads_d[i]) * (grads_f[i] - grads_d[i]);
      norm += grads_d[i] * grads_d[i];
    }
    // Relative L2 error per tensor; float32 accumulations over <= 68 tokens x 64 features stay near 1e-6.
    EXPECT_LT(std::sqrt(diff / norm), 1e-4) << slot.name;
  }
}

TEST(VitCpu, RejectsBatchLargerThanMaxAndBackwardBeforeForward) {
  const VitLayout layout(parse_vit_spec(kTinySpec));
  VitCpu<float> model(layout, 2);
  std::vector<float> params(layout.buffer_size()), images(3 * 3 * 64), logits(15), grads(layout.buffer_size());
  EXPECT_THROW(model.backward(params.data(), logits.data(), grads.data()), Error);
  try {
    model.forward(params.data(), images.data(), 3, logits.data());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("batch 3 is outside [1, 2]"), std::string::npos) << e.what();
  }
}

TEST(SoftmaxCrossEntropy, MatchesHandComputedValuesAndGradient) {
  const std::vector<double> logits = {1.0, 2.0, 3.0, 1000.0, 1000.0, 1000.0};
  const std::vector<int32_t> labels = {2, 0};
  std::vector<double> dlogits(6);
  const double loss = softmax_cross_entropy(logits.data(), labels.data(), 2, 3, dlogits.data(), 4.0);
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  const double expected = ((std::log(z) - 3.0) + std::log(3.0)) / 2;  // the second row must not overflow
  EXPECT_NEAR(loss, expected, 1e-12);
  EXPECT_NEAR(dlogits[2], 4.0 / 2 * (std::exp(3.0) / z - 1), 1e-12);
  EXPECT_NEAR(dlogits[0], 4.0 / 2 * (std::exp(1.0) / z), 1e-12);
  EXPECT_NEAR(dlogits[3], 4.0 / 2 * (1.0 / 3 - 1), 1e-12);
  EXPECT_NEAR(dlogits[4], 4.0 / 2 * (1.0 / 3), 1e-12);
}

TEST(SoftmaxCrossEntropy, RejectsLabelsOutsideTheClassesNamingIndexAndValue) {
  const std::vector<float> logits(6, 0.0f);
  std::vector<float> dlogits(6, 7.0f);
  for (int32_t bad : {3, -1}) {
    const std::vector<int32_t> labels = {0, bad};
    try {
      softmax_cross_entropy(logits.data(), labels.data(), 2, 3, dlogits.data());
      FAIL() << "expected an error for label " << bad;
    } catch (const Error& e) {
      const std::string expected = "label " + std::to_string(bad) + " at batch index 1 is outside [0, 3)";
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(dlogits[0], 7.0f);  // labels are checked before anything is written
}

}  // namespace
}  // namespace ddpx
