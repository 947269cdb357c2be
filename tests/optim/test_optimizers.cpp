// SGD and AdamW against torch.optim's update rules, written out again here independently in double precision,
// plus a few first steps worked by hand. Tolerance: the fused kernels run in fp32 on values of order 1, so after
// 6 steps they agree with the double reference to 2e-6 relative plus 5e-7 absolute (a few fp32 ulps of 1, for
// results that cancelled down near zero).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "error_expect.hpp"
#include "core/rng.hpp"
#include "optim/adamw.hpp"
#include "optim/optimizer.hpp"
#include "optim/optimizer_spec.hpp"
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
  OptimizerSpec options() const {
    return {.kind = OptimizerKind::sgd,
            .lr = static_cast<float>(lr),
            .weight_decay = static_cast<float>(weight_decay),
            .momentum = static_cast<float>(momentum),
            .dampening = static_cast<float>(dampening),
            .nesterov = nesterov};
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
  OptimizerSpec options() const {
    return {.kind = OptimizerKind::adamw,
            .lr = static_cast<float>(lr),
            .weight_decay = static_cast<float>(weight_decay),
            .beta1 = static_cast<float>(beta1),
            .beta2 = static_cast<float>(beta2),
            .eps = static_cast<float>(eps)};
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
  const OptimizerSpec options = hyper.options();
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
    const OptimizerSpec options{.kind = OptimizerKind::sgd, .lr = 0.1f, .momentum = 0.9f, .nesterov = nesterov};
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
  const OptimizerSpec decayed{.kind = OptimizerKind::sgd, .lr = 0.1f, .weight_decay = 0.1f, .momentum = 0.9f};
  float p = 1.f, buffer = 0.f;
  const float g = 0.5f;
  sgd_step_cpu(decayed, &p, &g, &buffer, 1, 1);
  EXPECT_FLOAT_EQ(buffer, 0.6f);
  EXPECT_FLOAT_EQ(p, 0.94f);
}

void check_adamw_against_reference(const AdamWHyper& hyper) {
  const size_t n = 257;
  const OptimizerSpec options = hyper.options();
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
  const OptimizerSpec options{.kind = OptimizerKind::adamw, .lr = 0.1f, .weight_decay = 0.01f};
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

OptimizerSpec sgd_spec(float lr, float momentum, float weight_decay = 0.f, bool nesterov = false) {
  return {.kind = OptimizerKind::sgd, .lr = lr, .weight_decay = weight_decay, .momentum = momentum,
          .nesterov = nesterov};
}

TEST(Optimizer, StepsOwnStateAndCountsFromOne) {
  Rng rng(3);
  const size_t n = 64;
  std::vector<float> params = random_values(rng, n, 1.0), expected = params, momentum(n, 0.f);
  Optimizer sgd(sgd_spec(0.1f, 0.9f), n);
  EXPECT_EQ(sgd.name(), "sgd");
  EXPECT_EQ(sgd.state_names(), (std::vector<std::string>{"momentum"}));
  for (int64_t step = 1; step <= 3; ++step) {
    const std::vector<float> grads = random_values(rng, n, 1.0);
    sgd.step(params.data(), grads.data(), n);
    sgd_step_cpu(sgd_spec(0.1f, 0.9f), expected.data(), grads.data(), momentum.data(), n, step);
  }
  EXPECT_EQ(sgd.step_count(), 3);
  EXPECT_EQ(params, expected);
  EXPECT_EQ(std::vector<float>(sgd.state("momentum").begin(), sgd.state("momentum").end()), momentum);
  expect_error([&] { sgd.step(params.data(), params.data(), n - 1); }, {"63", "64"});
  expect_error([&] { (void)sgd.state("exp_avg"); }, {"exp_avg", "momentum"});

  Optimizer adamw(OptimizerSpec{.kind = OptimizerKind::adamw}, n);
  EXPECT_EQ(adamw.state_names(), (std::vector<std::string>{"exp_avg", "exp_avg_sq"}));
  EXPECT_EQ(Optimizer(sgd_spec(0.1f, 0.f), n).state_names().size(), 0u);
}

TEST(Optimizer, PaddingStaysZero) {
  // Flat buffers carry zero padding between tensors: zero grad + zero param must remain exactly zero.
  std::vector<float> params(8, 0.f), grads(8, 0.f);
  Optimizer adamw(OptimizerSpec{.kind = OptimizerKind::adamw, .weight_decay = 0.1f}, 8);
  Optimizer sgd(sgd_spec(0.01f, 0.9f, 0.1f, true), 8);
  for (int i = 0; i < 3; ++i) {
    adamw.step(params.data(), grads.data(), 8);
    sgd.step(params.data(), grads.data(), 8);
  }
  EXPECT_EQ(params, std::vector<float>(8, 0.f));
}

TEST(Optimizer, OptionsJsonIsReadable) {
  Optimizer sgd(sgd_spec(0.01f, 0.9f, 5e-4f, true), 1);
  EXPECT_EQ(sgd.options_json().dump(),
            R"({"dampening":0.0,"lr":0.01,"momentum":0.9,"nesterov":true,"weight_decay":0.0005})");
  EXPECT_EQ(Optimizer(OptimizerSpec{.kind = OptimizerKind::adamw}, 1).options_json()["eps"].get<double>(), 1e-8);
}

TEST(Optimizer, ValidateNamesTheFlag) {
  const auto refused = [](const OptimizerSpec& spec, std::initializer_list<std::string_view> words) {
    expect_error([&] { (void)Optimizer(spec, 1); }, words);
  };
  refused(sgd_spec(-0.1f, 0.f), {"--lr", "-0.1"});
  refused({.kind = OptimizerKind::adamw, .lr = NAN}, {"--lr", "nan"});
  refused(sgd_spec(0.1f, 1.f), {"--momentum", "[0, 1)"});
  refused(sgd_spec(0.1f, -0.5f), {"--momentum", "-0.5"});
  refused(sgd_spec(0.1f, 0.f, -1.f), {"--weight-decay", "-1"});
  refused({.kind = OptimizerKind::adamw, .weight_decay = -1.f}, {"--weight-decay", "-1"});
  refused(sgd_spec(0.1f, 0.f, 0.f, true), {"--nesterov", "--momentum"});
  refused({.kind = OptimizerKind::sgd, .momentum = 0.9f, .dampening = 0.5f, .nesterov = true},
          {"--nesterov", "--dampening"});
  refused({.kind = OptimizerKind::adamw, .beta2 = 1.f}, {"--beta2", "1"});
  refused({.kind = OptimizerKind::adamw, .eps = -1e-8f}, {"--eps"});
  refused({.kind = OptimizerKind::adamw, .eps = 0.f}, {"--eps must be a finite number > 0", "got 0"});
}

// The flags as `ddpx train` reads them: `given` answers for the flags the user gave.
OptimizerSpec parsed(std::string_view name, std::map<std::string, double> given) {
  return parse_optimizer_spec(name, [&](std::string_view flag) -> std::optional<double> {
    const auto it = given.find(std::string(flag));
    return it == given.end() ? std::nullopt : std::optional<double>(it->second);
  });
}

TEST(OptimizerSpec, ParsesTheFlagsOnceWithTrainsDefaults) {
  // Defaults: `ddpx train`'s (plain SGD at lr 0.01; AdamW at the same lr, no decay, torch's betas and eps).
  EXPECT_EQ(parsed("sgd", {}), (OptimizerSpec{.kind = OptimizerKind::sgd, .lr = 0.01f}));
  const OptimizerSpec adamw = parsed("adamw", {{"--lr", 1e-3}, {"--beta2", 0.95}, {"--weight-decay", 0.1}});
  EXPECT_EQ(adamw, (OptimizerSpec{.kind = OptimizerKind::adamw, .lr = 1e-3f, .weight_decay = 0.1f, .beta1 = 0.9f,
                                  .beta2 = 0.95f, .eps = 1e-8f}));
  EXPECT_EQ(adamw.name(), "adamw");
  const OptimizerSpec sgd = parsed("sgd", {{"--momentum", 0.9}, {"--nesterov", 1}, {"--dampening", 0}});
  EXPECT_TRUE(sgd.nesterov);
  EXPECT_EQ(sgd.momentum, 0.9f);
  // Every flag the parser asks about is one of the table's, each once.
  const std::vector<std::string_view> flags = optimizer_flag_names();
  EXPECT_EQ(flags.size(), 8u);
  std::vector<std::string_view> asked;
  (void)parse_optimizer_spec("sgd", [&](std::string_view flag) -> std::optional<double> {
    asked.push_back(flag);
    return std::nullopt;
  });
  EXPECT_EQ(asked, flags);
}

TEST(OptimizerSpec, DefaultsPerKindAdamWAsPyTorch) {
  // torch.optim.AdamW(params): lr 1e-3, weight_decay 1e-2, betas (0.9, 0.999), eps 1e-8.
  const OptimizerSpec adamw = parsed("adamw", {});
  EXPECT_EQ(adamw.lr, 1e-3f);
  EXPECT_EQ(adamw.weight_decay, 1e-2f);
  EXPECT_EQ(adamw.beta1, 0.9f);
  EXPECT_EQ(adamw.beta2, 0.999f);
  EXPECT_EQ(adamw.eps, 1e-8f);
  // A flag given replaces only its own default.
  const OptimizerSpec adamw_lr = parsed("adamw", {{"--lr", 0.05}});
  EXPECT_EQ(adamw_lr.lr, 0.05f);
  EXPECT_EQ(adamw_lr.weight_decay, 1e-2f);
  EXPECT_EQ(parsed("adamw", {{"--weight-decay", 0}}).weight_decay, 0.f);
  // SGD keeps the seed's lr 0.01 and no weight decay (train --help says why).
  const OptimizerSpec sgd = parsed("sgd", {});
  EXPECT_EQ(sgd.lr, 0.01f);
  EXPECT_EQ(sgd.weight_decay, 0.f);
  EXPECT_EQ(sgd.momentum, 0.f);
}

TEST(OptimizerSpec, ParseErrorsNameTheFlagAndTheChoices) {
  expect_error([] { parsed("lamb", {}); }, {"--optimizer", "lamb", "sgd, adamw"});
  expect_error([] { parsed("adamw", {{"--momentum", 0.9}}); },
               {"--momentum applies to --optimizer sgd, but this run uses --optimizer adamw"});
  expect_error([] { parsed("sgd", {{"--beta1", 0.9}}); }, {"--beta1 applies to --optimizer adamw", "sgd"});
  expect_error([] { parsed("sgd", {{"--nesterov", 1}}); }, {"--nesterov", "--momentum"});
  expect_error([] { parsed("sgd", {{"--lr", -1}}); }, {"--lr must be positive", "-1"});
  expect_error([] { parsed("sgd", {{"--lr", 1e-50}}); }, {"--lr 1e-50 is 0 in fp32"});
  expect_error([] { parsed("adamw", {{"--eps", 1e39}}); }, {"--eps 1e+39 is not a finite fp32 number"});
  expect_error([] { parsed("adamw", {{"--beta1", 1}}); }, {"--beta1", "[0, 1)"});
}

TEST(OptimizerSpec, StateNamesAndGraphReplayFollowTheKind) {
  // The names checkpoints store the state under (io/checkpoint: optimizer.<name>.<tensor>).
  EXPECT_EQ(parsed("sgd", {}).state_names(), std::vector<std::string>{});
  EXPECT_EQ(parsed("sgd", {{"--momentum", 0.9}}).state_names(), std::vector<std::string>{"momentum"});
  EXPECT_EQ(parsed("adamw", {}).state_names(), (std::vector<std::string>{"exp_avg", "exp_avg_sq"}));
  // A replayed graph freezes the step number: exact for SGD (only step 1 differs), not for AdamW.
  EXPECT_TRUE(parsed("sgd", {{"--momentum", 0.9}}).graph_replay_exact());
  EXPECT_FALSE(parsed("adamw", {}).graph_replay_exact());
  EXPECT_EQ(parsed("adamw", {{"--lr", 3e-4}}).lr_at(1000), 3e-4f);
}

// The per-step scalars both engines use, against torch.optim.AdamW's formulas with the hyperparameters as typed
// (Python floats): bias_correction1 = 1 - beta1**step, step_size = lr / bias_correction1,
// bias_correction2_sqrt = sqrt(1 - beta2**step), decay = 1 - lr * weight_decay.
TEST(AdamW, StepScalarsAreTorchsFromTheTypedDecimals) {
  const OptimizerSpec spec{.kind = OptimizerKind::adamw, .lr = 1e-3f, .weight_decay = 0.01f, .beta1 = 0.9f,
                           .beta2 = 0.999f, .eps = 1e-8f};
  for (const int64_t step : {int64_t{1}, int64_t{2}, int64_t{10}, int64_t{1000}}) {
    SCOPED_TRACE(step);
    const AdamWStepScalars s = adamw_step_scalars(spec, step);
    const double bc1 = 1 - std::pow(0.9, static_cast<double>(step));
    const double bc2 = 1 - std::pow(0.999, static_cast<double>(step));
    EXPECT_EQ(s.lr, 1e-3f);
    EXPECT_EQ(s.bias_correction1, static_cast<float>(bc1));
    EXPECT_EQ(s.neg_step_size, static_cast<float>(-(1e-3 / bc1)));
    EXPECT_EQ(s.bias_correction2_sqrt, static_cast<float>(std::sqrt(bc2)));
    EXPECT_EQ(s.decay, static_cast<float>(1 - 1e-3 * 0.01));
    EXPECT_EQ(s.average_weight, static_cast<float>(1 - 0.9));
    EXPECT_EQ(s.square_weight, static_cast<float>(1 - 0.999));  // not 1 - 0.999f (0.00099998713)
    EXPECT_EQ(s.beta2, 0.999f);
    EXPECT_EQ(s.eps, 1e-8f);
  }
  // Step 1 by hand: bias_correction1 = 0.1 (the double 0.1, not 1 - 0.9f = 0.100000024).
  EXPECT_EQ(adamw_step_scalars(spec, 1).bias_correction1, 0.1f);
  expect_error([&] { (void)adamw_step_scalars(spec, 0); }, {"step must start at 1"});
}

TEST(Sgd, StepScalarsMarkTheFirstStep) {
  const OptimizerSpec spec{.kind = OptimizerKind::sgd, .lr = 0.05f, .weight_decay = 1e-4f, .momentum = 0.9f,
                           .dampening = 0.1f};
  const SgdStepScalars first = sgd_step_scalars(spec, 1), later = sgd_step_scalars(spec, 7);
  EXPECT_TRUE(first.first_step);
  EXPECT_FALSE(later.first_step);
  EXPECT_EQ(later.lr, 0.05f);
  EXPECT_EQ(later.momentum, 0.9f);
  EXPECT_EQ(later.weight_decay, 1e-4f);
  EXPECT_EQ(later.grad_scale, static_cast<float>(1 - 0.1));  // torch: 1 - dampening, from the typed 0.1
  // Asking for SGD scalars of an AdamW spec is a bug in ddpx, not a user error: an InternalError naming it.
  try {
    (void)sgd_step_scalars(OptimizerSpec{.kind = OptimizerKind::adamw}, 1);
    ADD_FAILURE() << "expected an InternalError";
  } catch (const InternalError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("internal error"), std::string::npos) << message;
    EXPECT_NE(message.find("SGD scalars of an --optimizer adamw spec"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace ddpx
