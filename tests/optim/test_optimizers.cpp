// SGD and AdamW against torch.optim's update rules, written out again here independently in double precision,
// plus a few first steps worked by hand. Tolerance: the fused kernels run in fp32 on values of order 1, so after
// 6 steps they agree with the double reference to 2e-6 relative plus 5e-7 absolute (a few fp32 ulps of 1, for
// results that cancelled down near zero).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "error_expect.hpp"
#include "core/rng.hpp"
#include "optim/adamw.hpp"
#include "optim/optimizer.hpp"
#include "optim/sgd.hpp"

namespace ddpx {
namespace {

using testing::expect_error;

void expect_close(const std::vector<float>& got, const std::vector<double>& expected, const char* what) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], expected[i], 2e-6 * std::abs(expected[i]) + 5e-7) << what << "[" << i << "]";
}

std::vector<float> random_values(Rng& rng, size_t n, double scale) {
  std::vector<float> values(n);
  for (float& v : values) v = static_cast<float>(scale * rng.normal());
  return values;
}

// torch.optim.SGD (single-tensor path), in double, with the hyperparameters as typed (Python floats).
struct SgdHyper {
  double lr, momentum, dampening, weight_decay;
  bool nesterov;
  SgdOptions options() const {
    return {static_cast<float>(lr), static_cast<float>(momentum), static_cast<float>(dampening),
            static_cast<float>(weight_decay), nesterov};
  }
};
struct SgdReference {
  SgdHyper hyper;
  std::vector<double> params, momentum;
  void step(const std::vector<float>& grads, int64_t step) {
    const double lr = hyper.lr, mu = hyper.momentum, dampening = hyper.dampening, wd = hyper.weight_decay;
    for (size_t i = 0; i < params.size(); ++i) {
      double d_p = grads[i];
      if (wd != 0) d_p += wd * params[i];
      if (mu != 0) {
        momentum[i] = step == 1 ? d_p : mu * momentum[i] + (1 - dampening) * d_p;
        d_p = hyper.nesterov ? d_p + mu * momentum[i] : momentum[i];
      }
      params[i] -= lr * d_p;
    }
  }
};

// torch.optim.AdamW (single-tensor path, amsgrad=False), in double, with the hyperparameters as typed.
struct AdamWHyper {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 1e-2;
  AdamWOptions options() const {
    return {static_cast<float>(lr), static_cast<float>(beta1), static_cast<float>(beta2), static_cast<float>(eps),
            static_cast<float>(weight_decay)};
  }
};
struct AdamWReference {
  AdamWHyper hyper;
  std::vector<double> params, exp_avg, exp_avg_sq;
  void step(const std::vector<float>& grads, int64_t step) {
    const double lr = hyper.lr, b1 = hyper.beta1, b2 = hyper.beta2;
    for (size_t i = 0; i < params.size(); ++i) {
      const double g = grads[i];
      params[i] *= 1 - lr * hyper.weight_decay;
      exp_avg[i] = b1 * exp_avg[i] + (1 - b1) * g;
      exp_avg_sq[i] = b2 * exp_avg_sq[i] + (1 - b2) * g * g;
      const double m_hat = exp_avg[i] / (1 - std::pow(b1, step));
      const double denom = std::sqrt(exp_avg_sq[i]) / std::sqrt(1 - std::pow(b2, step)) + hyper.eps;
      params[i] -= lr * m_hat / denom;
    }
  }
};

void check_sgd_against_reference(const SgdHyper& hyper) {
  const size_t n = 257;
  const SgdOptions options = hyper.options();
  Rng rng(11);
  std::vector<float> params = random_values(rng, n, 1.0), momentum(n, 0.f);
  SgdReference reference{hyper, std::vector<double>(params.begin(), params.end()), std::vector<double>(n, 0.0)};
  for (int64_t step = 1; step <= 6; ++step) {
    const std::vector<float> grads = random_values(rng, n, 0.5);
    sgd_step_cpu(options, params.data(), grads.data(), momentum.data(), n, step);
    reference.step(grads, step);
  }
  expect_close(params, reference.params, "params");
  if (options.momentum != 0.f) expect_close(momentum, reference.momentum, "momentum");
}

TEST(Sgd, MatchesTorchFormulaForEveryVariant) {
  // lr, momentum, dampening, weight_decay, nesterov
  check_sgd_against_reference({0.1, 0.9, 0, 0, false});
  check_sgd_against_reference({0.1, 0.9, 0, 0, true});
  check_sgd_against_reference({0.05, 0.9, 0, 1e-2, false});
  check_sgd_against_reference({0.05, 0.8, 0, 1e-2, true});
  check_sgd_against_reference({0.05, 0.5, 0.3, 0, false});
  check_sgd_against_reference({0.2, 0, 0, 1e-3, false});
}

TEST(Sgd, FirstStepsByHand) {
  // p = 1, g = 0.5 each step, lr = 0.1, momentum = 0.9.
  // plain:    step 1 buf = 0.5, p = 0.95;  step 2 buf = 0.9 * 0.5 + 0.5 = 0.95, p = 0.95 - 0.095 = 0.855
  // nesterov: step 1 buf = 0.5, g = 0.5 + 0.45 = 0.95, p = 0.905;  step 2 buf = 0.95, g = 0.5 + 0.855, p = 0.7695
  for (bool nesterov : {false, true}) {
    const SgdOptions options{.lr = 0.1f, .momentum = 0.9f, .nesterov = nesterov};
    float p = 1.f, buffer = 0.f;
    const float g = 0.5f;
    sgd_step_cpu(options, &p, &g, &buffer, 1, 1);
    EXPECT_FLOAT_EQ(buffer, 0.5f);
    EXPECT_FLOAT_EQ(p, nesterov ? 0.905f : 0.95f);
    sgd_step_cpu(options, &p, &g, &buffer, 1, 2);
    EXPECT_FLOAT_EQ(buffer, 0.95f);
    EXPECT_FLOAT_EQ(p, nesterov ? 0.7695f : 0.855f);
  }
  // Weight decay enters the momentum buffer: g' = 0.5 + 0.1 * 1 = 0.6, p = 1 - 0.1 * 0.6 = 0.94.
  const SgdOptions decayed{.lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.1f};
  float p = 1.f, buffer = 0.f;
  const float g = 0.5f;
  sgd_step_cpu(decayed, &p, &g, &buffer, 1, 1);
  EXPECT_FLOAT_EQ(buffer, 0.6f);
  EXPECT_FLOAT_EQ(p, 0.94f);
}

void check_adamw_against_reference(const AdamWHyper& hyper) {
  const size_t n = 257;
  const AdamWOptions options = hyper.options();
  Rng rng(12);
  std::vector<float> params = random_values(rng, n, 1.0), exp_avg(n, 0.f), exp_avg_sq(n, 0.f);
  AdamWReference reference{hyper, std::vector<double>(params.begin(), params.end()), std::vector<double>(n, 0.0),
                           std::vector<double>(n, 0.0)};
  for (int64_t step = 1; step <= 6; ++step) {
    const std::vector<float> grads = random_values(rng, n, 0.5);
    adamw_step_cpu(options, params.data(), grads.data(), exp_avg.data(), exp_avg_sq.data(), n, step);
    reference.step(grads, step);
  }
  expect_close(params, reference.params, "params");
  expect_close(exp_avg, reference.exp_avg, "exp_avg");
  expect_close(exp_avg_sq, reference.exp_avg_sq, "exp_avg_sq");
}

TEST(AdamW, MatchesTorchFormula) {
  check_adamw_against_reference({});
  check_adamw_against_reference({.lr = 1e-2, .weight_decay = 0});
  check_adamw_against_reference({.lr = 3e-3, .beta1 = 0.3, .beta2 = 0.9, .eps = 1e-6, .weight_decay = 0.1});
}

TEST(AdamW, BiasCorrectionByHand) {
  // p = 1, g = 0.5, lr = 0.1, weight decay 0.01, betas (0.9, 0.999), eps 1e-8.
  // step 1: p = 1 * (1 - 0.001) = 0.999; m = 0.05, v = 0.00025; m_hat = 0.5, sqrt(v_hat) = 0.5:
  //         p = 0.999 - 0.1 * 0.5 / (0.5 + 1e-8) = 0.899000002
  // step 2 (g = 0.5 again): m = 0.095, v = 0.00049975; m_hat = 0.095 / 0.19 = 0.5; v_hat = 0.00049975 / 0.001999 =
  //         0.25; so again p = 0.899000002 * 0.999 - 0.1 * 0.5 / 0.50000001 = 0.798101004
  const AdamWOptions options{.lr = 0.1f, .weight_decay = 0.01f};
  float p = 1.f, m = 0.f, v = 0.f;
  const float g = 0.5f;
  adamw_step_cpu(options, &p, &g, &m, &v, 1, 1);
  EXPECT_FLOAT_EQ(m, 0.05f);
  EXPECT_FLOAT_EQ(v, 0.00025f);
  EXPECT_FLOAT_EQ(p, 0.899000002f);
  adamw_step_cpu(options, &p, &g, &m, &v, 1, 2);
  EXPECT_FLOAT_EQ(m, 0.095f);
  EXPECT_FLOAT_EQ(v, 0.00049975f);
  EXPECT_NEAR(p, 0.798101004, 2e-7);
}

TEST(Optimizer, StepsOwnStateAndCountsFromOne) {
  Rng rng(3);
  const size_t n = 64;
  std::vector<float> params = random_values(rng, n, 1.0), expected = params, momentum(n, 0.f);
  auto sgd = Optimizer::make("sgd", {.lr = 0.1f, .momentum = 0.9f}, n);
  EXPECT_EQ(sgd->name(), "sgd");
  EXPECT_EQ(sgd->state_names(), (std::vector<std::string>{"momentum"}));
  for (int64_t step = 1; step <= 3; ++step) {
    const std::vector<float> grads = random_values(rng, n, 1.0);
    sgd->step(params.data(), grads.data(), n);
    sgd_step_cpu({.lr = 0.1f, .momentum = 0.9f}, expected.data(), grads.data(), momentum.data(), n, step);
  }
  EXPECT_EQ(sgd->step_count(), 3);
  EXPECT_EQ(params, expected);
  EXPECT_EQ(std::vector<float>(sgd->state("momentum").begin(), sgd->state("momentum").end()), momentum);
  expect_error([&] { sgd->step(params.data(), params.data(), n - 1); }, {"63", "64"});
  expect_error([&] { (void)sgd->state("exp_avg"); }, {"exp_avg", "momentum"});

  auto adamw = Optimizer::make("adamw", {}, n);
  EXPECT_EQ(adamw->state_names(), (std::vector<std::string>{"exp_avg", "exp_avg_sq"}));
  EXPECT_EQ(adamw->lr(), 1e-3f);
  adamw->set_lr(5e-4f);
  EXPECT_EQ(adamw->lr(), 5e-4f);
  EXPECT_EQ(Optimizer::make("sgd", {.momentum = 0.f}, n)->state_names().size(), 0u);
}

TEST(Optimizer, PaddingStaysZero) {
  // Flat buffers carry zero padding between tensors: zero grad + zero param must remain exactly zero.
  std::vector<float> params(8, 0.f), grads(8, 0.f);
  auto adamw = Optimizer::make("adamw", {.weight_decay = 0.1f}, 8);
  auto sgd = Optimizer::make("sgd", {.weight_decay = 0.1f, .nesterov = true}, 8);
  for (int i = 0; i < 3; ++i) {
    adamw->step(params.data(), grads.data(), 8);
    sgd->step(params.data(), grads.data(), 8);
  }
  EXPECT_EQ(params, std::vector<float>(8, 0.f));
}

TEST(Optimizer, OptionsJsonIsReadable) {
  auto sgd = Optimizer::make("sgd", {.lr = 0.01f, .weight_decay = 5e-4f, .nesterov = true}, 1);
  EXPECT_EQ(sgd->options_json().dump(),
            R"({"dampening":0.0,"lr":0.01,"momentum":0.9,"nesterov":true,"weight_decay":0.0005})");
  EXPECT_EQ(Optimizer::make("adamw", {}, 1)->options_json()["eps"].get<double>(), 1e-8);
}

TEST(Optimizer, ErrorsNameTheFlag) {
  expect_error([] { Optimizer::make("lamb", {}, 1); }, {"--optimizer", "lamb", "sgd, adamw"});
  expect_error([] { Optimizer::make("sgd", {.lr = -0.1f}, 1); }, {"--lr", "-0.1"});
  expect_error([] { Optimizer::make("adamw", {.lr = NAN}, 1); }, {"--lr", "nan"});
  expect_error([] { Optimizer::make("sgd", {.momentum = 1.f}, 1); }, {"--momentum", "[0, 1)"});
  expect_error([] { Optimizer::make("sgd", {.momentum = -0.5f}, 1); }, {"--momentum", "-0.5"});
  expect_error([] { Optimizer::make("sgd", {.weight_decay = -1.f}, 1); }, {"--weight-decay", "-1"});
  expect_error([] { Optimizer::make("adamw", {.weight_decay = -1.f}, 1); }, {"--weight-decay", "-1"});
  expect_error([] { Optimizer::make("sgd", {.momentum = 0.f, .nesterov = true}, 1); }, {"--nesterov", "--momentum"});
  expect_error([] { Optimizer::make("sgd", {.dampening = 0.5f, .nesterov = true}, 1); },
               {"--nesterov", "--dampening"});
  expect_error([] { Optimizer::make("adamw", {.beta2 = 1.f}, 1); }, {"--beta2", "1"});
  expect_error([] { Optimizer::make("adamw", {.eps = -1e-8f}, 1); }, {"--eps"});
  expect_error([] { Optimizer::make("adamw", {.momentum = 0.9f}, 1); }, {"--momentum", "--optimizer adamw"});
  expect_error([] { Optimizer::make("sgd", {.beta1 = 0.9f}, 1); }, {"--beta1", "--optimizer sgd"});
  auto sgd = Optimizer::make("sgd", {}, 1);
  expect_error([&] { sgd->set_lr(-1.f); }, {"--lr"});
  EXPECT_EQ(sgd->lr(), 0.01f);  // unchanged after the refused set_lr
}

}  // namespace
}  // namespace ddpx
