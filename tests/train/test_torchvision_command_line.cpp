// torchvision's train.py command line through the ddpx executable, on the CPU (issue 50 item 1): --data-path's
// train/ and val/, --epochs, --output-dir's outputs and a --resume from them, 2 ranks, --test-only, and the
// refusals as a user sees them; and ddpx's own --val-resize (the eval transform's resize side, which
// --val-resize-size sets). The data is a small ImageFolder tree of Fashion-MNIST PNGs.
// Note: the runs that translate to the native flags of the tvparts/tvaugment branches (--lr-step-unit, ...) pass
// only where those are merged; the --val-resize tests need nothing else.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli_runner.hpp"
#include "core/json_parse.hpp"
#include "fashion_files.hpp"
#include "support/scratch_dir.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::run_ddpx;

// D/train and D/val as torchvision's --data-path expects, made once per test binary.
const std::string& imagenet_like() {
  static const std::string dir = [] {
    const fs::path d = testing::fresh_dir("train", "torchvision_data");
    testing::write_fashion_folder(d / "train", DataSplit::train, 64);
    testing::write_fashion_folder(d / "val", DataSplit::test, 32);
    return d.string();
  }();
  return dir;
}

size_t count_of(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

nlohmann::json report_config(const fs::path& report) {
  return parse_json(testing::read_text(report), report.string()).at("config");
}

const std::string kTorchvision = "a torchvision command line";

TEST(TorchvisionCommandLine, TrainsWithEpochsValAndOutputDirThenResumesFromIt) {
  if (!testing::fashion_mnist_installed()) GTEST_SKIP() << "dataset-fashion-mnist missing";
  const fs::path out = testing::fresh_dir("train", "torchvision_run") / "runs";
  const std::string common = "train --data-path " + imagenet_like() +
                             " --model vit_tiny_test --device cpu -b 16 -j 1 --lr 0.01 --opt adamw --wd 0.05 "
                             "--lr-scheduler cosineannealinglr --label-smoothing 0.1 --print-freq 2 --output-dir " +
                             out.string();
  CliResult r = run_ddpx(common + " --epochs 2");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(count_of(r.output, kTorchvision), 1u) << r.output;
  EXPECT_NE(r.output.find("--momentum 0.9"), std::string::npos) << r.output;  // a default taken, listed
  for (const char* file : {"report.json", "metrics.jsonl", "model.safetensors", "checkpoint-4.safetensors",
                           "checkpoint-8.safetensors"})
    EXPECT_TRUE(fs::exists(out / file)) << file;  // a checkpoint at each epoch's end (64 images / 16 a step)
  nlohmann::json config = report_config(out / "report.json");
  ASSERT_TRUE(config.contains("torchvision")) << config.dump();
  EXPECT_EQ(config["torchvision"]["command_line"], true);
  EXPECT_EQ(config["torchvision"]["settings"]["--batch-size"], "16");
  EXPECT_EQ(config["torchvision"]["settings"]["--lr-scheduler"], "cosineannealinglr");
  EXPECT_EQ(config["batch"], 16);
  EXPECT_EQ(config["optimizer"]["name"], "adamw");
  EXPECT_EQ(config["optimizer"]["lr"], 0.01);
  EXPECT_EQ(config["optimizer"]["weight_decay"], 0.05);
  EXPECT_EQ(config["steps"], 8);
  // The same command resumed from the first epoch's checkpoint in --output-dir (as an interrupted run would be).
  r = run_ddpx(common + " --epochs 2 --resume " + (out / "checkpoint-4.safetensors").string());
  ASSERT_EQ(r.status, 0) << r.output;
  config = report_config(out / "report.json");
  EXPECT_EQ(config["steps"], 8);
  // torchvision's --test-only: the checkpoint scored on val/, as `ddpx eval` does.
  r = run_ddpx("train --data-path " + imagenet_like() + " --model vit_tiny_test --device cpu -b 16 --test-only "
               "--resume " + out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("top-1"), std::string::npos) << r.output;
  // A torch.save file is not a ddpx checkpoint.
  r = run_ddpx(common + " --epochs 2 --resume " + (out / "checkpoint.pth").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("ddpx resumes its own checkpoints"), std::string::npos) << r.output;
}

TEST(TorchvisionCommandLine, TwoRanksPrintTheLineOnce) {
  if (!testing::fashion_mnist_installed()) GTEST_SKIP() << "dataset-fashion-mnist missing";
  const fs::path out = testing::fresh_dir("train", "torchvision_two_ranks");
#ifdef DDPX_HAVE_GLOO
  const std::string backend = "gloo";
#else
  const std::string backend = "mpi";  // a build without Gloo (as on the GPU machines)
#endif
  // One epoch of this tiny tree is 4 steps a rank: ddpx's --warmup (steps left unmeasured, not a torchvision flag)
  // must leave some for the report.
  const CliResult r = run_ddpx("train --nproc-per-node 2 --backend " + backend + " --data-path " + imagenet_like() +
                               " --model vit_tiny_test --device cpu -b 8 -j 1 --epochs 1 --lr 0.01 --warmup 1 --report " +
                               (out / "r.json").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(count_of(r.output, kTorchvision), 1u) << r.output;
  const nlohmann::json config = report_config(out / "r.json");
  EXPECT_EQ(config["world"], 2);
  EXPECT_EQ(config["torchvision"]["settings"]["--batch-size"], "8");
}

TEST(TorchvisionCommandLine, RefusalsNameTheFlags) {
  if (!testing::fashion_mnist_installed()) GTEST_SKIP() << "dataset-fashion-mnist missing";
  const std::string base = "train --data-path " + imagenet_like() + " --model vit_tiny_test --device cpu ";
  const auto expect_refusal = [](const CliResult& r, const std::string& part) {
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("ddpx: error: "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(part), std::string::npos) << r.output;
  };
  expect_refusal(run_ddpx(base + "--sync-bn"), "--sync-bn (torchvision's train.py) is not implemented in ddpx");
  expect_refusal(run_ddpx(base + "-b 8 --batch 8"), "-b and --batch: both set --batch-size");
  expect_refusal(run_ddpx(base + "--auto-augment augmix"), "--auto-augment augmix");
  expect_refusal(run_ddpx("train --data-path /nonexistent -b 8"), "--data-path /nonexistent: torchvision's layout is");
  // Needs the model: after the translation.
  expect_refusal(run_ddpx(base + "--train-crop-size 224 --epochs 1"),
                 "--train-crop-size 224: ddpx crops to the model's image size, 16 for --model vit_tiny_test");
}

// --val-resize (torchvision's --val-resize-size): the eval transform's resize side before the center crop.
TEST(ValResize, SetsTheEvalResizeSideAndIsCheckedAgainstTheCrop) {
  if (!testing::fashion_mnist_installed()) GTEST_SKIP() << "dataset-fashion-mnist missing";
  const std::string d = imagenet_like();
  const std::string base = "train --device cpu --model vit_tiny_test --data folder:" + d + "/train --val folder:" +
                           d + "/val --batch 16 --steps 2 --workers 1 --warmup 0 --seed 3 ";
  CliResult r = run_ddpx(base + "--val-resize 8");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("the eval resize side 8 is below the crop 16"), std::string::npos) << r.output;
  r = run_ddpx(base + "--val-resize -3");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--val-resize"), std::string::npos) << r.output;
  // The same weights scored through two resize sides: the same at the default's side (int(16 / 0.875) = 18), other
  // at 28 (the whole 28-pixel image kept, then cropped to 16).
  const auto val_line = [](const std::string& output) {
    const size_t at = output.rfind("val loss");
    return at == std::string::npos ? std::string() : output.substr(at, output.find('\n', at) - at);
  };
  const CliResult by_default = run_ddpx(base);
  const CliResult at_18 = run_ddpx(base + "--val-resize 18");
  const CliResult at_28 = run_ddpx(base + "--val-resize 28");
  ASSERT_EQ(by_default.status, 0) << by_default.output;
  ASSERT_EQ(at_18.status, 0) << at_18.output;
  ASSERT_EQ(at_28.status, 0) << at_28.output;
  ASSERT_FALSE(val_line(by_default.output).empty()) << by_default.output;
  EXPECT_EQ(val_line(by_default.output), val_line(at_18.output));
  EXPECT_NE(val_line(by_default.output), val_line(at_28.output));
}

// --checkpoint-every-epoch (what torchvision's --output-dir asks for): a checkpoint at each epoch's end.
TEST(CheckpointEveryEpoch, WritesOneAtEachEpochsEnd) {
  if (!testing::fashion_mnist_installed()) GTEST_SKIP() << "dataset-fashion-mnist missing";
  const fs::path ck = testing::fresh_dir("train", "checkpoint_every_epoch") / "ck";
  const std::string d = imagenet_like();
  CliResult r = run_ddpx("train --device cpu --model vit_tiny_test --data folder:" + d + "/train --batch 16 "
                         "--epochs 3 --workers 1 --quiet --keep-checkpoints 10 --checkpoint-dir " + ck.string() +
                         " --checkpoint-every-epoch");
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* name : {"checkpoint-4.safetensors", "checkpoint-8.safetensors", "checkpoint-12.safetensors"})
    EXPECT_TRUE(fs::exists(ck / name)) << name;  // 64 images / 16 per step: 4 steps an epoch
  EXPECT_FALSE(fs::exists(ck / "checkpoint-2.safetensors"));
  r = run_ddpx("train --device cpu --model vit_tiny_test --data learnable --steps 2 --checkpoint-every-epoch");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--checkpoint-every-epoch needs --checkpoint-dir DIR"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace ddpx
