// torchvision's recipe parts through `ddpx train` on Fashion-MNIST (CPU, a small MLP): --repeated-augment,
// --lr-warmup-method/--lr-step-unit epoch with a schedule counted in epochs, and the weight average on
// torchvision's cadence (--ema-every, --ema-copy-epochs, --ema-adjust torchvision), together, given in --epochs with
// --val: the rate per step is what train.py's per-epoch stepping gives, the report's config records the new
// fields (the given and the used decay), a --resume from a checkpoint inside the second epoch ends with the
// straight run's weights and average bit for bit, two ranks equal one rank with the whole batch, and the bad
// combinations are errors naming the flag.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "saved_weights.hpp"
#include "train/recipe_options.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using testing::max_abs_diff;
using testing::run_ddpx;
using testing::saved_weights;

const std::string kFashion = "/usr/share/datasets/fashion-mnist";
const std::string kModel = "mlp:image=28,channels=1,layers=1,width=16,classes=10";

fs::path scratch(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("ddpx_test_tv_recipe_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

bool have_fashion() { return fs::exists(kFashion + "/train-labels-idx1-ubyte.gz"); }

// 60000 samples: the sampler keeps 59904 per epoch; at --batch 1024 on one rank that is 58 steps an epoch.
std::string tv_run(const std::string& extra) {
  return fmt::format(
      "train --model {} --data idx:{} --batch 1024 --warmup 0 --lr 0.1 --momentum 0.9 --workers 1 --cpu-threads 1 "
      "--log-every 1 --repeated-augment 3 --lr-schedule cosine --lr-warmup-epochs 1 --lr-warmup-method constant "
      "--lr-warmup-start 0.1 --lr-step-unit epoch --ema-decay 0.99999 --ema-every 4 --ema-copy-epochs 1 "
      "--ema-adjust torchvision {}", kModel, kFashion, extra);
}

std::vector<nlohmann::json> metric_steps(const fs::path& path) {
  std::vector<nlohmann::json> steps;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (j.value("kind", "") == "step") steps.push_back(j);
  }
  return steps;
}

TEST(TorchvisionRecipeTraining, EpochsValReportAndResumeBitIdentical) {
  if (!have_fashion()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const std::string val = fmt::format("--epochs 3 --val idx:{}:test", kFashion);
  const fs::path straight = scratch("straight.safetensors"), report = scratch("report.json");
  const fs::path metrics = scratch("m.jsonl");
  testing::CliResult r = run_ddpx(tv_run(fmt::format("{} --save {} --report {} --metrics {}", val, straight.string(),
                                                     report.string(), metrics.string())));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("step    174/174"), std::string::npos) << r.output;  // 3 x 58 steps
  // The rate changes only at epoch boundaries: ConstantLR's 0.1 x 0.1 through epoch 0, then cosine over 2 epochs.
  const std::vector<nlohmann::json> steps = metric_steps(metrics);
  ASSERT_EQ(steps.size(), 174u);
  for (const auto& [step, lr] : std::vector<std::pair<int, double>>{
           {1, 0.01}, {58, 0.01}, {59, 0.1}, {116, 0.1}, {117, 0.05}, {174, 0.05}})
    EXPECT_NEAR(steps[static_cast<size_t>(step - 1)]["lr"].get<double>(), lr, 1e-7) << "step " << step;
  // The report's config: the schedule, the sampler, and both decays (1 - 1e-5 x 1 x 1024 x 4 / 3).
  nlohmann::json config;
  std::ifstream(report) >> config;
  config = config["config"];
  EXPECT_EQ(config["lr_step_unit"], "epoch");
  EXPECT_EQ(config["lr_warmup_method"], "constant");
  EXPECT_EQ(config["lr_schedule"], "cosine to 0 at epoch 3, constant warm-up 1 epochs at 0.1x, stepped per epoch");
  EXPECT_EQ(config["repeated_augment"], 3);
  EXPECT_EQ(config["ema_decay"], 0.99999);
  EXPECT_DOUBLE_EQ(config["ema_decay_used"].get<double>(), 1.0 - (1.0 - 0.99999) * (1 * 1024 * 4 / 3.0));
  EXPECT_EQ(config["ema_every"], 4);
  EXPECT_EQ(config["ema_copy_epochs"], 1);
  EXPECT_EQ(config["ema_adjust"], "torchvision");
  // Checkpoints at 100 (inside epoch 1) and the end; a run resumed from 100 ends where the straight one did.
  const fs::path dir = scratch("ckpt"), resumed = scratch("resumed.safetensors");
  r = run_ddpx(tv_run(fmt::format("{} --checkpoint-dir {} --checkpoint-every 100", val, dir.string())));
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string from = (dir / "checkpoint-100.safetensors").string();
  r = run_ddpx(tv_run(fmt::format("{} --resume {} --save {}", val, from, resumed.string())));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(saved_weights(straight, kModel), saved_weights(resumed, kModel));
  const std::vector<float> average = saved_weights(weight_average_path(straight.string()), kModel);
  EXPECT_EQ(average, saved_weights(weight_average_path(resumed.string()), kModel));
  EXPECT_NE(average, saved_weights(straight, kModel));
  // The sampler and the average's cadence are part of what a resume must repeat.
  r = run_ddpx(tv_run(fmt::format("{} --resume {} --repeated-augment 2", val, from)));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--repeated-augment 3, this run has 2"), std::string::npos) << r.output;
  r = run_ddpx(tv_run(fmt::format("{} --resume {} --ema-every 8", val, from)));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("resume with the same --ema-every"), std::string::npos) << r.output;
}

// Repeated augmentation's order does not depend on the world size (only its padding and kept share do), so two
// ranks of 512 take the same samples per step as one rank of 1024 (per-rank means averaged: fp32 rounding).
TEST(TorchvisionRecipeTraining, TwoRanksEqualOneRankWithTheWholeBatch) {
#if !defined(DDPX_HAVE_MPI) && !defined(DDPX_HAVE_GLOO)
  GTEST_SKIP() << "built without MPI or Gloo";
#endif
  if (!have_fashion()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const std::string common = fmt::format(
      "train --model {} --data idx:{} --steps 6 --warmup 0 --lr 0.1 --workers 1 --cpu-threads 1 --log-every 1 "
      "--repeated-augment 3 --lr-schedule exponential:0.5 --lr-step-unit epoch --ema-decay 0.5 --ema-every 2",
      kModel, kFashion);
  const fs::path one = scratch("one.safetensors"), two = scratch("two.safetensors");
  testing::CliResult r = run_ddpx(common + " --batch 1024 --save " + one.string());
  ASSERT_EQ(r.status, 0) << r.output;
  r = run_ddpx(common + " --batch 512 --nproc-per-node 2 --save " + two.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_LT(max_abs_diff(saved_weights(one, kModel), saved_weights(two, kModel)), 2e-5);
  EXPECT_LT(max_abs_diff(saved_weights(weight_average_path(one.string()), kModel),
                         saved_weights(weight_average_path(two.string()), kModel)), 2e-5);
}

TEST(TorchvisionRecipeTraining, BadCombinationsNameTheFlag) {
  const std::string base = "train --model mlp_tiny_test --steps 4 --batch 4";
  for (const auto& [flags, expected] : std::vector<std::pair<std::string, std::string>>{
           {"--data learnable --repeated-augment 3", "--repeated-augment 3 needs data with epochs"},
           {"--data learnable --lr-step-unit epoch", "--lr-step-unit epoch needs data with epochs"},
           {"--data learnable --ema-decay 0.9 --ema-copy-epochs 1", "--ema-copy-epochs 1 needs data with epochs"},
           {"--data learnable --ema-decay 0.9 --ema-adjust torchvision", "--ema-adjust torchvision divides"},
           {"--data learnable --ema-every 2", "give --ema-decay D too"},
           {"--data learnable --repeated-augment -1", "--repeated-augment -1"},
           {"--data learnable --ema-decay 0.9 --ema-every 0", "--ema-every 0"},
           {"--data learnable --lr-warmup-method cosine", "unknown --lr-warmup-method 'cosine'"},
           {"--data learnable --lr-step-unit epochs", "unknown --lr-step-unit 'epochs'"},
           {"--data learnable --lr-schedule exponential", "exponential needs its gamma"},
       }) {
    const testing::CliResult r = run_ddpx(base + " " + flags);
    EXPECT_EQ(r.status, 2) << flags << "\n" << r.output;
    EXPECT_NE(r.output.find(expected), std::string::npos) << flags << "\n" << r.output;
  }
  if (!have_fashion()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const std::string idx = fmt::format("train --model {} --data idx:{}", kModel, kFashion);
  for (const auto& [flags, expected] : std::vector<std::pair<std::string, std::string>>{
           {"--steps 4 --batch 4 --lr-step-unit epoch --lr-warmup-steps 2", "--lr-warmup-steps 2 counts optimizer"},
           {"--epochs 1 --batch 4 --lr-step-unit epoch --lr-warmup-epochs 1", "--lr-warmup-epochs 1 is not shorter"},
           {"--steps 4 --batch 60000 --repeated-augment 2", "lower --batch to 59904"},
       }) {
    const testing::CliResult r = run_ddpx(idx + " " + flags);
    EXPECT_EQ(r.status, 2) << flags << "\n" << r.output;
    EXPECT_NE(r.output.find(expected), std::string::npos) << flags << "\n" << r.output;
  }
}

TEST(TorchvisionRecipeTraining, HelpTeachesTorchvisionsNames) {
  const testing::CliResult r = run_ddpx("train --help");
  ASSERT_EQ(r.status, 0) << r.output;
  // The help wraps its lines: compare with every run of spaces and line breaks as one space.
  std::string flat;
  for (char c : r.output)
    if (!std::isspace(static_cast<unsigned char>(c)) || (!flat.empty() && flat.back() != ' '))
      flat += std::isspace(static_cast<unsigned char>(c)) ? ' ' : c;
  for (const char* text : {"--lr-warmup-method", "--lr-step-unit", "exponential:GAMMA", "--repeated-augment",
                           "--ra-sampler --ra-reps", "--ema-every", "--model-ema-steps", "--ema-copy-epochs",
                           "--ema-adjust", "torchvision's --lr-scheduler"})
    EXPECT_NE(flat.find(text), std::string::npos) << text;
}

}  // namespace
}  // namespace ddpx
