// `ddpx train --dampening`: the SGD hyperparameter the optimizer spec reads and its errors name is a flag of train
// (it was not, so `--nesterov`'s error told users to set a flag that did not exist): it changes the run from the
// second update on (torch's momentum buffer starts as the first gradient, undamped), and it is refused with AdamW,
// beside --nesterov and out of [0, 1], each refusal naming the flag.
#include <gtest/gtest.h>

#include "cli_runner.hpp"
#include "report/step_record.hpp"

namespace ddpx {
namespace {

using testing::fresh_dir;
using testing::run_ddpx;

const std::string kTinyRun = "train --device cpu --model vit_tiny_test --batch 2 --steps 3 --warmup 0 --log-every 1 "
                             "--workers 1 --cpu-threads 1 --lr 0.05 ";

std::vector<LossPoint> losses_of(const std::string& flags, const std::string& name) {
  const std::string report_path = (fresh_dir("dampening_" + name) / "run.json").string();
  const auto train = run_ddpx(kTinyRun + flags + " --report " + report_path);
  EXPECT_EQ(train.status, 0) << train.output;
  if (train.status != 0) return {};
  return load_run_report(report_path).ranks.at(0).losses;
}

TEST(OptimizerFlags, DampeningIsATrainFlagThatChangesTheSecondUpdateOn) {
  const std::vector<LossPoint> plain = losses_of("--momentum 0.9", "plain");
  const std::vector<LossPoint> same = losses_of("--momentum 0.9 --dampening 0", "zero");
  const std::vector<LossPoint> damped = losses_of("--momentum 0.9 --dampening 0.5", "half");
  ASSERT_EQ(plain.size(), 3u);
  ASSERT_EQ(same.size(), 3u);
  ASSERT_EQ(damped.size(), 3u);
  for (size_t k = 0; k < 3; ++k) EXPECT_EQ(same[k].loss, plain[k].loss) << k;  // 0 is the default
  EXPECT_EQ(damped[0].loss, plain[0].loss);  // before any update
  EXPECT_EQ(damped[1].loss, plain[1].loss);  // after the first: the buffer is the gradient itself
  EXPECT_NE(damped[2].loss, plain[2].loss);  // after the second: (1 - 0.5) of the gradient joins the buffer
}

TEST(OptimizerFlags, DampeningIsRefusedWhereTheSpecRefusesIt) {
  const auto adamw = run_ddpx(kTinyRun + "--optimizer adamw --dampening 0.5");
  EXPECT_EQ(adamw.status, 2) << adamw.output;
  EXPECT_NE(adamw.output.find("--dampening"), std::string::npos) << adamw.output;
  const auto nesterov = run_ddpx(kTinyRun + "--momentum 0.9 --nesterov --dampening 0.5");
  EXPECT_EQ(nesterov.status, 2) << nesterov.output;
  EXPECT_NE(nesterov.output.find("--dampening 0"), std::string::npos) << nesterov.output;
  const auto range = run_ddpx(kTinyRun + "--dampening 1.5");
  EXPECT_EQ(range.status, 2) << range.output;
  EXPECT_NE(range.output.find("--dampening must be in [0, 1]"), std::string::npos) << range.output;
}

}  // namespace
}  // namespace ddpx
