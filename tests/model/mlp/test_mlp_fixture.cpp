// Parity of the CPU MLP with PyTorch on the committed fixture tests/fixtures/mlp_tiny_torch.safetensors (made by
// tools/make_fixtures.py --models mlp from a float64 PyTorch run of its torch.nn module; inputs are on the float16
// grid, so they are exact in both precisions; the .json records which torch made it). Checked: logits, loss, every
// parameter gradient, and the weights after 3 SGD steps (lr 0.1, momentum 0.9, weight_decay 1e-4, same batch each
// step), for MlpCpu<double> (tight) and MlpCpu<float> (float32 tolerances of the size of PyTorch's own float32
// error, recorded in tests/fixtures/mlp_tiny_torch.json).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "io/safetensors.hpp"
#include "model/mlp/mlp_cpu.hpp"
#include "optim/sgd.hpp"

namespace ddpx {
namespace {

const std::filesystem::path kFixturePath =
    std::filesystem::path(DDPX_SOURCE_DIR) / "tests" / "fixtures" / "mlp_tiny_torch.safetensors";
constexpr int kSgdSteps = 3;
constexpr double kLr = 0.1, kMomentum = 0.9, kWeightDecay = 1e-4;

std::vector<double> as_double(const HostTensor& t) {
  if (t.dtype == TensorDType::f64) return {t.values<double>().begin(), t.values<double>().end()};
  const std::vector<float> f = t.to_float32();
  return {f.begin(), f.end()};
}

class MlpTorchFixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(std::filesystem::exists(kFixturePath))
        << kFixturePath << " is missing; regenerate it with tools/make_fixtures.py --models mlp (needs torch)";
    contents_ = new SafetensorsContents(read_safetensors(kFixturePath));
  }
  static void TearDownTestSuite() {
    delete contents_;
    contents_ = nullptr;
  }

  static const HostTensor& tensor(const std::string& name) {
    const HostTensor* t = contents_->find(name);
    if (t == nullptr) throw Error("fixture has no tensor '" + name + "'");
    return *t;
  }
  // A flat buffer in the layout with every tensor named prefix + <torch name>; padding 0.
  template <typename T>
  std::vector<T> flat(const std::string& prefix) const {
    std::vector<T> buffer(layout_.buffer_size(), T(0));
    for (const TensorSlot& slot : layout_.tensors()) {
      const HostTensor& t = tensor(prefix + slot.name);
      EXPECT_EQ(t.shape, slot.shape) << prefix << slot.name;
      const std::vector<double> values = as_double(t);
      EXPECT_EQ(values.size(), slot.numel) << prefix << slot.name;
      std::copy(values.begin(), values.end(), buffer.begin() + slot.offset);
    }
    return buffer;
  }
  template <typename T>
  std::vector<T> images() const {
    const std::vector<double> v = as_double(tensor("images"));
    return {v.begin(), v.end()};
  }
  std::vector<int32_t> labels() const {
    const std::vector<int64_t> v = tensor("labels").to_int64();
    return {v.begin(), v.end()};
  }
  int64_t batch() const { return tensor("labels").shape.at(0); }

  // Per element |ours - ref| <= rel * |ref| + abs_of_max * max|ref| over the tensor; reports the worst element.
  template <typename T>
  void expect_close(const std::string& what, const T* ours, const std::vector<double>& ref, size_t offset,
                    size_t n, double rel, double abs_of_max) const {
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

  MlpLayout layout_{parse_mlp_spec("mlp_tiny_test")};
  static SafetensorsContents* contents_;
};
SafetensorsContents* MlpTorchFixture::contents_ = nullptr;

// Tolerances per precision, as (relative to the element, relative to the tensor's largest element).
struct Tolerances {
  double logits_rel, logits_of_max, loss_rel;
  double grad_rel, grad_of_max;
  double sgd_rel, sgd_of_max;
};
// double: the fixture's gradients and SGD weights are float64 results rounded to float32 (relative error
// <= 2^-24 = 6e-8), so 1e-7 of each element (measured worst: 0.59 of it, i.e. exactly that rounding); 1e-11 of the
// tensor's max absorbs float64 summation-order noise. Logits and loss are stored in float64: 1e-11 (measured: far
// below).
constexpr Tolerances kDouble{1e-11, 0, 1e-11, 1e-7, 1e-11, 1e-7, 1e-11};
// float: the ViT fixture's float32 tolerances (tests/model/vit/test_vit_fixture.cpp), which hold here with room:
// PyTorch's own float32 run is at most 5e-7 of each tensor's max away from float64 (mlp_tiny_torch.json). Measured
// worst, in units of these tolerances (torch 1.13 fixture): logits 0.05, gradients 0.06 (hidden.0.weight), SGD
// weights 0.26 (hidden.0.weight).
constexpr Tolerances kFloat{2e-6, 2e-6, 1e-6, 1e-5, 2e-6, 3e-7, 3e-7};

template <typename T>
struct Step {
  T loss;
  std::vector<T> logits, grads;
};

template <typename T>
Step<T> loss_and_grads(MlpCpu<T>& model, const std::vector<T>& params, const std::vector<T>& images,
                       const std::vector<int32_t>& labels) {
  const int64_t batch = static_cast<int64_t>(labels.size()), classes = model.layout().config().num_classes;
  Step<T> s;
  s.logits.resize(static_cast<size_t>(batch * classes));
  std::vector<T> dlogits(s.logits.size());
  model.forward(params.data(), images.data(), batch, s.logits.data());
  s.loss = softmax_cross_entropy(s.logits.data(), labels.data(), batch, classes, dlogits.data());
  s.grads.assign(params.size(), T(0));
  model.backward(params.data(), dlogits.data(), s.grads.data());
  return s;
}

// torch.optim.SGD, written out for double: g += wd * p; buf = g (first step) or momentum * buf + g; p -= lr * buf.
void sgd_step(std::vector<double>& params, const std::vector<double>& grads, std::vector<double>& buf, int step) {
  for (size_t i = 0; i < params.size(); ++i) {
    const double g = grads[i] + kWeightDecay * params[i];
    buf[i] = step == 1 ? g : kMomentum * buf[i] + g;
    params[i] -= kLr * buf[i];
  }
}
// The project's fused SGD (src/optim/sgd) for float.
void sgd_step(std::vector<float>& params, const std::vector<float>& grads, std::vector<float>& buf, int step) {
  const OptimizerSpec options{.kind = OptimizerKind::sgd,
                              .lr = static_cast<float>(kLr),
                              .weight_decay = static_cast<float>(kWeightDecay),
                              .momentum = static_cast<float>(kMomentum)};
  sgd_step_cpu(options, params.data(), grads.data(), buf.data(), params.size(), step);
}

TEST_F(MlpTorchFixture, DoubleMatchesTorchFloat64) {
  MlpCpu<double> model(layout_, batch());
  const std::vector<double> params = flat<double>("");
  const Step<double> s = loss_and_grads(model, params, images<double>(), labels());
  const std::vector<double> ref_logits = as_double(tensor("logits"));
  expect_close("logits", s.logits.data(), ref_logits, 0, ref_logits.size(), kDouble.logits_rel,
               kDouble.logits_of_max);
  EXPECT_NEAR(s.loss, as_double(tensor("loss"))[0], kDouble.loss_rel * s.loss);
  const std::vector<double> ref_grads = flat<double>("grad.");
  for (const TensorSlot& slot : layout_.tensors())
    expect_close("grad." + slot.name, s.grads.data(), ref_grads, slot.offset, slot.numel, kDouble.grad_rel,
                 kDouble.grad_of_max);
}

TEST_F(MlpTorchFixture, FloatMatchesTorchWithinFloat32Rounding) {
  MlpCpu<float> model(layout_, batch());
  const std::vector<float> params = flat<float>("");
  const Step<float> s = loss_and_grads(model, params, images<float>(), labels());
  const std::vector<double> ref_logits = as_double(tensor("logits"));
  expect_close("logits", s.logits.data(), ref_logits, 0, ref_logits.size(), kFloat.logits_rel,
               kFloat.logits_of_max);
  EXPECT_NEAR(s.loss, as_double(tensor("loss"))[0], kFloat.loss_rel * s.loss);
  const std::vector<double> ref_grads = flat<double>("grad.");
  for (const TensorSlot& slot : layout_.tensors())
    expect_close("grad." + slot.name, s.grads.data(), ref_grads, slot.offset, slot.numel, kFloat.grad_rel,
                 kFloat.grad_of_max);
}

TEST_F(MlpTorchFixture, ThreeSgdStepsMatchTorchInDoubleAndFloat) {
  const std::vector<double> ref_losses = as_double(tensor("sgd.losses"));
  ASSERT_EQ(ref_losses.size(), static_cast<size_t>(kSgdSteps));
  const std::vector<double> ref_after = flat<double>("sgd3.");
  auto run = [&](auto zero, const Tolerances& tol, const char* precision) {
    using T = decltype(zero);
    MlpCpu<T> model(layout_, batch());
    std::vector<T> params = flat<T>(""), momentum(params.size(), T(0));
    const std::vector<T> imgs = images<T>();
    for (int step = 1; step <= kSgdSteps; ++step) {
      const Step<T> s = loss_and_grads(model, params, imgs, labels());
      EXPECT_NEAR(s.loss, ref_losses[step - 1], tol.loss_rel * ref_losses[step - 1])
          << precision << " loss before step " << step;
      sgd_step(params, s.grads, momentum, step);
    }
    for (const TensorSlot& slot : layout_.tensors())
      expect_close(std::string(precision) + " sgd3." + slot.name, params.data(), ref_after, slot.offset,
                   slot.numel, tol.sgd_rel, tol.sgd_of_max);
  };
  run(0.0, kDouble, "double");
  run(0.0f, kFloat, "float");
}

}  // namespace
}  // namespace ddpx
