// WebDataset shards through the shuffle buffer (--shuffle-buffer, Note [Shuffle buffer] in data/epoch_sampler.hpp),
// end to end on the CPU: Fashion-MNIST written as one class-sorted shard trains within a point of the same images
// as a folder with the default (auto) buffer (WebDataset's usual 1000 is warned of; without a buffer it trains far
// worse); a run killed mid-epoch and resumed equals the uninterrupted
// run bit for bit; a negative buffer, and a resume with another buffer, are refused naming --shuffle-buffer.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <regex>
#include <string>

#include "cli_runner.hpp"
#include "fashion_files.hpp"
#include "saved_weights.hpp"
#include "support/scratch_dir.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::run_ddpx;

const std::string kModel = "mlp:image=28,channels=1,layers=1,width=64,classes=10";

// The top-1 of the run's last "val loss ... | top-1 X% ..." line; NaN when there is none.
double final_val_top1(const std::string& output) {
  const size_t line = output.rfind("val loss");
  std::smatch m;
  const std::string rest = line == std::string::npos ? "" : output.substr(line, output.find('\n', line) - line);
  return std::regex_search(rest, m, std::regex("top-1 ([0-9.]+)%")) ? std::stod(m[1].str()) : std::nan("");
}

TEST(WdsTraining, AClassSortedShardTrainsWithinAPointOfAFolderOfTheSameImages) {
  if (!testing::fashion_mnist_installed()) GTEST_SKIP() << "dataset-fashion-mnist missing";
  const fs::path dir = testing::fresh_dir("train", "wds_sorted");
  // 6,000 training images as a folder and as one shard sorted by class; 2,000 test images as the --val folder.
  testing::write_fashion_folder(dir / "train", DataSplit::train, 6000);
  testing::write_fashion_shard(dir / "sorted.tar", DataSplit::train, 6000, true);
  testing::write_fashion_folder(dir / "val", DataSplit::test, 2000);
  // 5 epochs with a cosine decay: converged enough that two orders of the same images land within half a point.
  const std::string recipe = " --device cpu --model " + kModel + " --val folder:" + (dir / "val").string() +
                             " --augment resize --steps 465 --lr-schedule cosine --batch 64 --optimizer adamw"
                             " --lr 0.002 --eval-every 1000 --workers 1 --warmup 0 --seed 2";
  const std::string shard = " --data wds:" + (dir / "sorted.tar").string();
  const CliResult folder = run_ddpx("train --data folder:" + (dir / "train").string() + recipe);
  ASSERT_EQ(folder.status, 0) << folder.output;
  const CliResult sorted = run_ddpx("train" + shard + recipe);  // --shuffle-buffer auto
  ASSERT_EQ(sorted.status, 0) << sorted.output;
  EXPECT_NE(sorted.output.find("a buffer of 6000 samples; auto: raised from 1000 for the shards' run of"),
            std::string::npos)
      << sorted.output;
  const CliResult webdataset = run_ddpx("train" + shard + recipe + " --shuffle-buffer 1000");
  ASSERT_EQ(webdataset.status, 0) << webdataset.output;
  EXPECT_NE(webdataset.output.find("warning: the shards hold"), std::string::npos) << webdataset.output;
  EXPECT_NE(webdataset.output.find("raise --shuffle-buffer to 6000 or more"), std::string::npos) << webdataset.output;
  const CliResult unbuffered = run_ddpx("train" + shard + recipe + " --shuffle-buffer 0");
  ASSERT_EQ(unbuffered.status, 0) << unbuffered.output;
  const double a = final_val_top1(folder.output), b = final_val_top1(sorted.output),
               c = final_val_top1(webdataset.output), d = final_val_top1(unbuffered.output);
  std::printf(
      "val top-1: folder %.2f%%; one class-sorted shard: %.2f%% (auto buffer), %.2f%% (buffer 1000), "
      "%.2f%% (no buffer)\n",
      a, b, c, d);
  EXPECT_LE(std::abs(a - b), 1.0) << "folder " << a << "% vs class-sorted shard " << b << "%";
  EXPECT_LT(d, a - 5.0) << "without the buffer a sorted shard should train far worse: " << d << "% vs " << a << "%";
  fs::remove_all(dir);
}

TEST(WdsTraining, KilledMidEpochAndResumedEqualsTheUninterruptedRun) {
  if (!testing::fashion_mnist_installed()) GTEST_SKIP() << "dataset-fashion-mnist missing";
  const fs::path dir = testing::fresh_dir("train", "wds_resume");
  testing::write_fashion_shard(dir / "s-0.tar", DataSplit::test, 1000, true);
  // 1,000 samples, batch 100 -> 10 batches per epoch; 14 steps cross the first epoch's end; a buffer of 300.
  const std::string common = "train --device cpu --model " + kModel + " --data wds:" + (dir / "s-0.tar").string() +
                             " --augment resize --batch 100 --optimizer adamw --lr 0.01 --workers 2 --warmup 0"
                             " --seed 5 --shuffle-buffer 300 --ddp";  // --ddp: the reducer has the step-K fault point
  const fs::path full = dir / "full.safetensors", resumed = dir / "resumed.safetensors", ckpt = dir / "ckpt";
  const CliResult a = run_ddpx(common + " --steps 14 --save " + full.string());
  ASSERT_EQ(a.status, 0) << a.output;
  const CliResult killed = run_ddpx(common + " --steps 14 --checkpoint-dir " + ckpt.string() + " --checkpoint-every 4",
                                    "DDPX_TEST_FAULT=step-14:0:kill");
  ASSERT_NE(killed.status, 0) << killed.output;
  const CliResult b = run_ddpx(common + " --steps 14 --resume " + ckpt.string() + " --save " + resumed.string());
  ASSERT_EQ(b.status, 0) << b.output;
  EXPECT_EQ(testing::saved_weights(full, kModel), testing::saved_weights(resumed, kModel))
      << "resumed mid-epoch through the shuffle buffer, the weights differ";
  // The buffer decides the order: another one would not continue the stream.
  const CliResult other = run_ddpx(common + " --steps 14 --resume " + ckpt.string() + " --shuffle-buffer 299");
  EXPECT_EQ(other.status, 2) << other.output;
  EXPECT_NE(other.output.find("--shuffle-buffer \"300\", this run has --shuffle-buffer 299"), std::string::npos)
      << other.output;
  const CliResult negative = run_ddpx(common + " --steps 1 --shuffle-buffer -5");
  EXPECT_EQ(negative.status, 2) << negative.output;
  EXPECT_NE(negative.output.find("--shuffle-buffer -5: give a number of samples, 0 or more"), std::string::npos)
      << negative.output;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ddpx
