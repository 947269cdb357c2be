// The learning-rate schedules, global-norm clipping and the weight EMA against PyTorch (tests/fixtures/
// recipe_torch.json from tools/make_recipe_fixtures.py), and their bad-input errors.
// Tolerances: schedules are closed forms in double against torch's chained float64 recurrences (1e-12 relative);
// the fp32 rate lr_at() hands the updates is that value rounded (1 ulp); clipping's norm and values are fp32
// (torch sums per tensor, then the norms; ddpx in double: 2 ulps); the EMA is the same fp32 operations (exact).
#include <gtest/gtest.h>

#include <cmath>

#include "error_expect.hpp"
#include "optim/grad_clip.hpp"
#include "optim/lr_schedule.hpp"
#include "optim/optimizer_spec.hpp"
#include "optim/weight_average.hpp"
#include "recipe_fixture.hpp"

namespace ddpx {
namespace {

using testing::as_vector;
using testing::expect_error;
using testing::recipe_fixture;

LrSchedule schedule_of(const nlohmann::json& c) {
  LrSchedule schedule = parse_lr_schedule(c["main"].get<std::string>() == "step"
                                              ? fmt::format("step:{}:{}", c["step_every"].get<int64_t>(),
                                                            c["gamma"].get<double>())
                                              : c["main"].get<std::string>());
  schedule.warmup_steps = c["warmup"];
  schedule.warmup_start_factor = c["start"];
  schedule.min_lr = c["min_lr"];
  schedule.total_steps = c["steps"];
  return schedule;
}

TEST(LrSchedule, EverySchedulerStepMatchesTorch) {
  const auto& cases = recipe_fixture()["schedules"];
  ASSERT_EQ(cases.size(), 8u);
  for (const auto& c : cases) {
    const LrSchedule schedule = schedule_of(c);
    const double base = c["base_lr"];
    schedule.validate(base);
    OptimizerSpec spec;
    spec.lr = static_cast<float>(base);
    spec.schedule = schedule;
    spec.validate();
    const auto rates = as_vector<double>(c["rates"]);
    ASSERT_EQ(static_cast<int64_t>(rates.size()), schedule.total_steps);
    for (size_t i = 0; i < rates.size(); ++i) {
      const int64_t step = static_cast<int64_t>(i) + 1;
      EXPECT_NEAR(schedule.rate_at(base, step), rates[i], 1e-12 * base)
          << schedule.describe() << " step " << step;
      EXPECT_EQ(spec.lr_at(step), schedule.varies() ? static_cast<float>(rates[i]) : spec.lr)
          << schedule.describe() << " step " << step;
    }
  }
}

TEST(LrSchedule, ConstantWithoutWarmupIsTheTypedRate) {
  OptimizerSpec spec;
  spec.lr = 0.1f;
  EXPECT_FALSE(spec.schedule.varies());
  EXPECT_TRUE(spec.graph_replay_exact());
  EXPECT_EQ(spec.lr_at(1), 0.1f);
  EXPECT_EQ(spec.lr_at(1000000), 0.1f);
  spec.schedule = parse_lr_schedule("cosine");
  spec.schedule.total_steps = 10;
  EXPECT_FALSE(spec.graph_replay_exact());  // the rate would be frozen in a captured step
}

TEST(LrSchedule, BadInputNamesTheFlag) {
  expect_error([] { parse_lr_schedule("cosin"); }, {"--lr-schedule", "cosin", "cosine"});
  expect_error([] { parse_lr_schedule("step"); }, {"--lr-schedule", "step size"});
  expect_error([] { parse_lr_schedule("step:0"); }, {"--lr-schedule"});
  expect_error([] { parse_lr_schedule("step:10:nan"); }, {"--lr-schedule", "gamma"});
  expect_error([] { parse_lr_schedule("step:10:2"); }, {"gamma"});
  expect_error([] { parse_lr_schedule("cosine:3"); }, {"takes no arguments"});
  LrSchedule s = parse_lr_schedule("cosine");
  s.total_steps = 100;
  s.warmup_steps = 100;
  expect_error([&] { s.validate(0.1); }, {"--lr-warmup-steps 100", "--steps 100"});
  s.warmup_steps = 10;
  s.warmup_start_factor = std::nan("");
  expect_error([&] { s.validate(0.1); }, {"--lr-warmup-start"});
  s.warmup_start_factor = 0.1;
  s.min_lr = -1;
  expect_error([&] { s.validate(0.1); }, {"--min-lr"});
  s.min_lr = 0.5;
  expect_error([&] { s.validate(0.1); }, {"--min-lr 0.5", "above --lr"});
  s.min_lr = INFINITY;
  expect_error([&] { s.validate(0.1); }, {"--min-lr"});
  LrSchedule constant;
  constant.total_steps = 5;
  constant.min_lr = 0.01;
  expect_error([&] { constant.validate(0.1); }, {"--min-lr", "cosine or linear"});
}

TEST(GradClip, MatchesClipGradNormOfTorch) {
  const auto& clip = recipe_fixture()["clip"];
  const auto grads = as_vector<float>(clip["grads"]);
  for (const auto& c : clip["cases"]) {
    std::vector<float> values = grads;
    const float norm = clip_grad_norm_cpu(values.data(), values.size(), c["max_norm"].get<float>());
    EXPECT_NEAR(norm, c["norm"].get<double>(), 2e-7 * c["norm"].get<double>());
    const auto expected = as_vector<float>(c["clipped"]);
    for (size_t i = 0; i < values.size(); ++i)
      EXPECT_NEAR(values[i], expected[i], 4e-7 * std::abs(expected[i]) + 1e-9) << "max_norm " << c["max_norm"];
  }
  EXPECT_EQ(clip_coefficient(0.5f, 1.f), 1.f);
  EXPECT_TRUE(std::isnan(clip_coefficient(NAN, 1.f)));
  expect_error([] { validate_clip_grad_norm(0); }, {"--clip-grad-norm", "> 0"});
  expect_error([] { validate_clip_grad_norm(-1); }, {"--clip-grad-norm"});
  expect_error([] { validate_clip_grad_norm(NAN); }, {"--clip-grad-norm"});
  expect_error([] { validate_clip_grad_norm(1e300); }, {"--clip-grad-norm"});
}

TEST(WeightAverage, MatchesTorchvisionsEma) {
  const auto& ema = recipe_fixture()["ema"];
  const auto weights = ema["weights"].get<std::vector<std::vector<float>>>();
  const auto averages = ema["averages"].get<std::vector<std::vector<float>>>();
  WeightAverage average(ema["decay"].get<double>(), weights[0].size());
  for (size_t s = 0; s < weights.size(); ++s) {
    average.update(weights[s].data(), weights[s].size());
    for (size_t i = 0; i < averages[s].size(); ++i)
      EXPECT_FLOAT_EQ(average.values()[i], averages[s][i]) << "update " << s + 1 << " element " << i;
  }
  EXPECT_EQ(average.updates(), 4);
  WeightAverage resumed(ema["decay"].get<double>(), weights[0].size());
  resumed.restore(averages[1], 2);
  for (size_t s = 2; s < weights.size(); ++s) resumed.update(weights[s].data(), weights[s].size());
  EXPECT_EQ(resumed.values(), average.values());  // a resume continues bit for bit
  expect_error([] { validate_ema_decay(1.0); }, {"--ema-decay"});
  expect_error([] { validate_ema_decay(0); }, {"--ema-decay"});
  expect_error([] { validate_ema_decay(NAN); }, {"--ema-decay"});
}

}  // namespace
}  // namespace ddpx
