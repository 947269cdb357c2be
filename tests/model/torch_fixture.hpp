// The PyTorch parity checks every model family's CPU reference runs against its committed fixture (made by
// tools/make_fixtures.py from a float64 PyTorch run; inputs on the float16 grid, so exact in both precisions):
// logits, loss, every parameter gradient, and the weights after 3 SGD steps (lr 0.1, momentum 0.9,
// weight_decay 1e-4, the same batch each step), for the model in double (tight) and float (float32 tolerances).
// A family's test names its fixture file, layout, CPU model template and tolerances, and calls the three checks
// (tests/model/vit/test_vit_fixture.cpp, tests/model/mlp/test_mlp_fixture.cpp).
// Model<T> needs: Model<T>(layout, batch); forward(params, images, batch, logits); backward(params, dlogits, grads)
// adding into grads; layout().config().num_classes.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "io/safetensors.hpp"
#include "model/cross_entropy.hpp"
#include "model/flat_layout.hpp"
#include "optim/sgd.hpp"

namespace ddpx::testing {

// Tolerances per precision: (relative to the element, relative to the tensor's largest element).
struct FixtureTolerances {
  double logits_rel, logits_of_max, loss_rel;
  double grad_rel, grad_of_max;
  double sgd_rel, sgd_of_max;
};

inline std::vector<double> fixture_values(const HostTensor& t) {
  if (t.dtype == TensorDType::f64) return {t.values<double>().begin(), t.values<double>().end()};
  const std::vector<float> f = t.to_float32();
  return {f.begin(), f.end()};
}

// One fixture file, read once, seen through a model's flat layout.
class TorchFixture {
 public:
  TorchFixture(const std::filesystem::path& path, const FlatLayout& layout, const std::string& how_to_make)
      : layout_(layout) {
    if (!std::filesystem::exists(path))
      throw Error(path.string() + " is missing; regenerate it with " + how_to_make);
    contents_ = std::make_unique<SafetensorsContents>(read_safetensors(path));
  }

  const HostTensor& tensor(const std::string& name) const {
    const HostTensor* t = contents_->find(name);
    if (t == nullptr) throw Error("fixture has no tensor '" + name + "'");
    return *t;
  }
  std::vector<double> values(const std::string& name) const { return fixture_values(tensor(name)); }
  // A flat buffer in the layout with every tensor named prefix + <torch name>; padding 0.
  template <typename T>
  std::vector<T> flat(const std::string& prefix) const {
    std::vector<T> buffer(layout_.buffer_size(), T(0));
    for (const TensorSlot& slot : layout_.tensors()) {
      const HostTensor& t = tensor(prefix + slot.name);
      EXPECT_EQ(t.shape, slot.shape) << prefix << slot.name;
      const std::vector<double> v = fixture_values(t);
      EXPECT_EQ(v.size(), slot.numel) << prefix << slot.name;
      std::copy(v.begin(), v.end(), buffer.begin() + static_cast<std::ptrdiff_t>(slot.offset));
    }
    return buffer;
  }
  template <typename T>
  std::vector<T> images() const {
    const std::vector<double> v = values("images");
    return {v.begin(), v.end()};
  }
  std::vector<int32_t> labels() const {
    const std::vector<int64_t> v = tensor("labels").to_int64();
    return {v.begin(), v.end()};
  }
  int64_t batch() const { return tensor("labels").shape.at(0); }
  const FlatLayout& layout() const { return layout_; }

 private:
  const FlatLayout& layout_;
  std::unique_ptr<SafetensorsContents> contents_;
};

// The test suite of one family's fixture: its layout and the fixture, read once for the suite. A family's suite
// derives from it and calls load() from SetUpTestSuite().
template <typename Layout>
class TorchFixtureSuite : public ::testing::Test {
 protected:
  static void load(Layout layout, const std::string& fixture_file, const std::string& how_to_make) {
    layout_ = std::make_unique<Layout>(std::move(layout));
    fixture_ = std::make_unique<TorchFixture>(
        std::filesystem::path(DDPX_SOURCE_DIR) / "tests" / "fixtures" / fixture_file, *layout_, how_to_make);
  }
  static void TearDownTestSuite() { fixture_.reset(), layout_.reset(); }
  static inline std::unique_ptr<Layout> layout_;
  static inline std::unique_ptr<TorchFixture> fixture_;
};

// Per element |ours - ref| <= rel * |ref| + abs_of_max * max|ref| over the tensor; reports the worst element.
template <typename T>
void expect_close(const std::string& what, const T* ours, const std::vector<double>& ref, size_t offset, size_t n,
                  double rel, double abs_of_max) {
  double max_ref = 0;
  for (size_t i = 0; i < n; ++i) max_ref = std::max(max_ref, std::abs(ref[offset + i]));
  double worst = 0;
  size_t worst_at = 0;
  for (size_t i = 0; i < n; ++i) {
    const double r = ref[offset + i];
    const double ratio = std::abs(ours[offset + i] - r) / (rel * std::abs(r) + abs_of_max * max_ref + 1e-300);
    if (ratio > worst) worst = ratio, worst_at = i;
  }
  EXPECT_LE(worst, 1.0) << what << ": element " << worst_at << " ours " << ours[offset + worst_at] << " torch "
                        << ref[offset + worst_at] << " (error in units of the tolerance)";
}

template <typename T>
struct FixtureStep {
  T loss;
  std::vector<T> logits, grads;
};

template <typename Model, typename T>
FixtureStep<T> loss_and_grads(Model& model, const std::vector<T>& params, const std::vector<T>& images,
                              const std::vector<int32_t>& labels) {
  const int64_t batch = static_cast<int64_t>(labels.size()), classes = model.layout().config().num_classes;
  FixtureStep<T> s;
  s.logits.resize(static_cast<size_t>(batch * classes));
  std::vector<T> dlogits(s.logits.size());
  model.forward(params.data(), images.data(), batch, s.logits.data());
  s.loss = softmax_cross_entropy(s.logits.data(), labels.data(), batch, classes, dlogits.data());
  s.grads.assign(params.size(), T(0));
  model.backward(params.data(), dlogits.data(), s.grads.data());
  return s;
}

inline constexpr int kFixtureSgdSteps = 3;
inline constexpr double kFixtureLr = 0.1, kFixtureMomentum = 0.9, kFixtureWeightDecay = 1e-4;

// torch.optim.SGD, written out for double: g += wd * p; buf = g (first step) or momentum * buf + g; p -= lr * buf.
inline void fixture_sgd_step(std::vector<double>& params, const std::vector<double>& grads, std::vector<double>& buf,
                             int step) {
  for (size_t i = 0; i < params.size(); ++i) {
    const double g = grads[i] + kFixtureWeightDecay * params[i];
    buf[i] = step == 1 ? g : kFixtureMomentum * buf[i] + g;
    params[i] -= kFixtureLr * buf[i];
  }
}
// The project's fused SGD (src/optim/sgd) for float.
inline void fixture_sgd_step(std::vector<float>& params, const std::vector<float>& grads, std::vector<float>& buf,
                             int step) {
  const OptimizerSpec options{.kind = OptimizerKind::sgd,
                              .lr = static_cast<float>(kFixtureLr),
                              .weight_decay = static_cast<float>(kFixtureWeightDecay),
                              .momentum = static_cast<float>(kFixtureMomentum)};
  sgd_step_cpu(options, params.data(), grads.data(), buf.data(), params.size(), step);
}

// Logits, loss and every gradient of Model<T> against the fixture's float64 run.
template <template <typename> class Model, typename T, typename Layout>
void expect_forward_backward_match(const TorchFixture& f, const Layout& layout, const FixtureTolerances& tol) {
  Model<T> model(layout, f.batch());
  const FixtureStep<T> s = loss_and_grads(model, f.flat<T>(""), f.images<T>(), f.labels());
  const std::vector<double> ref_logits = f.values("logits");
  expect_close("logits", s.logits.data(), ref_logits, 0, ref_logits.size(), tol.logits_rel, tol.logits_of_max);
  EXPECT_NEAR(s.loss, f.values("loss")[0], tol.loss_rel * s.loss);
  const std::vector<double> ref_grads = f.flat<double>("grad.");
  for (const TensorSlot& slot : layout.tensors())
    expect_close("grad." + slot.name, s.grads.data(), ref_grads, slot.offset, slot.numel, tol.grad_rel,
                 tol.grad_of_max);
}

// The losses before each of 3 SGD steps and the weights after them, against torch.optim.SGD's.
template <template <typename> class Model, typename T, typename Layout>
void expect_sgd_steps_match(const TorchFixture& f, const Layout& layout, const FixtureTolerances& tol,
                            const char* precision) {
  const std::vector<double> ref_losses = f.values("sgd.losses");
  ASSERT_EQ(ref_losses.size(), static_cast<size_t>(kFixtureSgdSteps));
  const std::vector<double> ref_after = f.flat<double>("sgd3.");
  Model<T> model(layout, f.batch());
  std::vector<T> params = f.flat<T>(""), momentum(params.size(), T(0));
  const std::vector<T> images = f.images<T>();
  for (int step = 1; step <= kFixtureSgdSteps; ++step) {
    const FixtureStep<T> s = loss_and_grads(model, params, images, f.labels());
    EXPECT_NEAR(s.loss, ref_losses[step - 1], tol.loss_rel * ref_losses[step - 1])
        << precision << " loss before step " << step;
    fixture_sgd_step(params, s.grads, momentum, step);
  }
  for (const TensorSlot& slot : layout.tensors())
    expect_close(std::string(precision) + " sgd3." + slot.name, params.data(), ref_after, slot.offset, slot.numel,
                 tol.sgd_rel, tol.sgd_of_max);
}

}  // namespace ddpx::testing
