// The CPU MLP's math and contract: gradients equal central finite differences of the loss (double), float agrees
// with double, backward adds into the gradients (accumulation), announces the layout's ready spans in order with
// gradients that no longer change afterwards, and a batch above the maximum is refused naming the model.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "error_expect.hpp"
#include "model/mlp/mlp_cpu.hpp"

namespace ddpx {
namespace {

// Mixed-width spec: the layers differ in width and input, so a transposed or misplaced tensor cannot pass.
const char* kSpec = "mlp:image=4,channels=2,layers=3,width=12,classes=5";

template <typename T>
std::vector<T> random_values(size_t n, uint64_t seed, double scale) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(normal(rng));
  return v;
}

template <typename T>
std::vector<T> random_params(const MlpLayout& layout, uint64_t seed) {
  std::vector<T> p(layout.buffer_size(), T(0));
  const std::vector<T> noise = random_values<T>(layout.buffer_size(), seed, 0.5);
  for (const TensorSlot& t : layout.tensors())
    for (size_t i = 0; i < t.numel; ++i) p[t.offset + i] = noise[t.offset + i];
  return p;
}

struct Problem {
  MlpLayout layout{parse_mlp_spec(kSpec)};
  int64_t batch = 3;
  std::vector<int32_t> labels{1, 4, 0};
};

template <typename T>
T loss_of(MlpCpu<T>& model, const Problem& p, const std::vector<T>& params, const std::vector<T>& images,
          std::vector<T>* grads = nullptr, const std::function<void(size_t, size_t)>& on_ready = {}) {
  const int64_t classes = p.layout.config().num_classes;
  std::vector<T> logits(static_cast<size_t>(p.batch * classes)), dlogits(logits.size());
  model.forward(params.data(), images.data(), p.batch, logits.data());
  const T loss = softmax_cross_entropy(logits.data(), p.labels.data(), p.batch, classes, dlogits.data());
  if (grads) model.backward(params.data(), dlogits.data(), grads->data(), on_ready);
  return loss;
}

TEST(MlpCpu, GradientsEqualFiniteDifferences) {
  Problem p;
  MlpCpu<double> model(p.layout, p.batch);
  std::vector<double> params = random_params<double>(p.layout, 1);
  const std::vector<double> images =
      random_values<double>(static_cast<size_t>(p.batch * p.layout.config().in_features()), 2, 1.0);
  std::vector<double> grads(params.size(), 0.0);
  loss_of(model, p, params, images, &grads);
  const double h = 1e-6;
  for (const TensorSlot& t : p.layout.tensors())
    for (size_t i = 0; i < t.numel; i += 7) {
      const size_t at = t.offset + i;
      const double saved = params[at];
      params[at] = saved + h;
      const double up = loss_of(model, p, params, images);
      params[at] = saved - h;
      const double down = loss_of(model, p, params, images);
      params[at] = saved;
      const double numeric = (up - down) / (2 * h);
      EXPECT_NEAR(grads[at], numeric, 1e-7 + 1e-6 * std::abs(numeric)) << t.name << "[" << i << "]";
    }
}

TEST(MlpCpu, FloatAgreesWithDouble) {
  Problem p;
  MlpCpu<double> exact(p.layout, p.batch);
  MlpCpu<float> single(p.layout, p.batch);
  const std::vector<double> pd = random_params<double>(p.layout, 3);
  const std::vector<double> xd =
      random_values<double>(static_cast<size_t>(p.batch * p.layout.config().in_features()), 4, 1.0);
  const std::vector<float> pf(pd.begin(), pd.end()), xf(xd.begin(), xd.end());
  std::vector<double> gd(pd.size(), 0.0);
  std::vector<float> gf(pd.size(), 0.f);
  const double ld = loss_of(exact, p, pd, xd, &gd);
  const float lf = loss_of(single, p, pf, xf, &gf);
  EXPECT_NEAR(lf, ld, 1e-5 * std::abs(ld));
  double max_grad = 0;
  for (double g : gd) max_grad = std::max(max_grad, std::abs(g));
  for (size_t i = 0; i < gd.size(); ++i) EXPECT_NEAR(gf[i], gd[i], 1e-5 * max_grad) << i;
}

TEST(MlpCpu, BackwardAddsAndAnnouncesFinalSpansInOrder) {
  Problem p;
  MlpCpu<float> model(p.layout, p.batch);
  const std::vector<float> params = random_params<float>(p.layout, 5);
  const std::vector<float> images =
      random_values<float>(static_cast<size_t>(p.batch * p.layout.config().in_features()), 6, 1.0);
  std::vector<float> once(params.size(), 0.f);
  loss_of(model, p, params, images, &once);

  std::vector<float> twice(params.size(), 0.f);
  loss_of(model, p, params, images, &twice);
  std::vector<BufferSpan> announced;
  std::vector<std::vector<float>> at_announcement;
  loss_of(model, p, params, images, &twice, [&](size_t begin, size_t end) {
    announced.push_back({begin, end});
    at_announcement.emplace_back(twice.begin() + begin, twice.begin() + end);
  });
  EXPECT_EQ(announced, p.layout.ready_spans());
  for (size_t s = 0; s < announced.size(); ++s)  // final when announced: nothing later in the pass touched them
    EXPECT_EQ(at_announcement[s], std::vector<float>(twice.begin() + announced[s].begin,
                                                     twice.begin() + announced[s].end)) << "span " << s;
  for (size_t i = 0; i < once.size(); ++i) EXPECT_FLOAT_EQ(twice[i], 2 * once[i]) << i;
  // Padding is never written.
  std::vector<bool> inside(params.size(), false);
  for (const TensorSlot& t : p.layout.tensors())
    for (size_t i = 0; i < t.numel; ++i) inside[t.offset + i] = true;
  for (size_t i = 0; i < twice.size(); ++i)
    if (!inside[i]) EXPECT_EQ(twice[i], 0.f) << i;
}

TEST(MlpCpu, BatchAboveTheMaximumIsRefused) {
  Problem p;
  MlpCpu<float> model(p.layout, 2);
  const std::vector<float> params(p.layout.buffer_size(), 0.f), images(3 * 32, 0.f);
  std::vector<float> logits(3 * 5);
  testing::expect_error([&] { model.forward(params.data(), images.data(), 3, logits.data()); },
                        {"batch 3 is outside [1, 2]", "mlp:image=4"});
}

}  // namespace
}  // namespace ddpx
