// Training on image sources end to end, on the CPU: a run killed mid-epoch and resumed equals the uninterrupted
// run bit for bit (the data position is in the checkpoint; another world size is refused); --epochs sets the steps
// from the batches every rank runs; 2 ranks of batch b equal 1 rank of batch 2b on folder data (same samples and
// crops per step: Note [Epochs and the sampler]), weights within fp32 rounding; --randaugment trains, the same
// weights whatever the loader's worker count.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "cli_runner.hpp"
#include "gpu_guard.hpp"
#include "io/checkpoint.hpp"
#include "io/param_safetensors.hpp"
#include "model/model_registry.hpp"
#include "saved_weights.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using testing::saved_weights;
using testing::run_ddpx;

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("ddpx_train_images_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

// Fashion-MNIST's test split (10,000 real images) through idx: and a pack of it: image sources with epochs.
const char* const kFashion = "/usr/share/datasets/fashion-mnist";
const std::string kModel = "mlp:image=28,channels=1,layers=1,width=32,classes=10";

TEST(ImageTraining, KilledMidEpochAndResumedEqualsTheUninterruptedRun) {
#ifndef DDPX_HAVE_GLOO
  GTEST_SKIP() << "built without Gloo (libgloo-dev): this CPU run of several ranks needs --backend gloo";
#endif
  if (!fs::exists(fs::path(kFashion) / "t10k-images-idx3-ubyte.gz")) GTEST_SKIP() << "dataset-fashion-mnist missing";
  // t10k: 10,000 images, batch 1000 -> 10 batches per epoch; 14 steps cross the first epoch's end.
  const std::string common = "train --device cpu --model " + kModel + " --data idx:" + std::string(kFashion) +
                             ":test --batch 1000 --optimizer adamw --lr 0.01 --workers 2 --warmup 0 --seed 5"
                             " --ddp";  // the reducer at one rank (the same weights) has the step-K fault point
  const fs::path full = scratch("full.safetensors"), resumed = scratch("resumed.safetensors"), ckpt = scratch("ckpt");
  fs::remove_all(ckpt);
  const testing::CliResult a = run_ddpx(common + " --steps 14 --save " + full.string());
  ASSERT_EQ(a.status, 0) << a.output;
  // Killed (SIGKILL) as step 14 begins: the checkpoint of step 12 (epoch 1, batch 2 of 10) was committed when step
  // 13's loss passed (Note [Deferred checkpoint commit]).
  const testing::CliResult killed = run_ddpx(common + " --steps 14 --checkpoint-dir " + ckpt.string() +
                                             " --checkpoint-every 4", "DDPX_TEST_FAULT=step-14:0:kill");
  ASSERT_NE(killed.status, 0) << killed.output;
  const CheckpointState state = read_checkpoint_info(ckpt).state;
  EXPECT_EQ(state.step, 12);
  EXPECT_EQ(state.data_position["epoch"], 1);
  EXPECT_EQ(state.data_position["batch_in_epoch"], 2);
  EXPECT_EQ(state.data_position["batches_per_epoch"], 10);
  const testing::CliResult b = run_ddpx(common + " --steps 14 --resume " + ckpt.string() + " --save " + resumed.string());
  ASSERT_EQ(b.status, 0) << b.output;
  EXPECT_EQ(saved_weights(full, kModel), saved_weights(resumed, kModel)) << "resumed mid-epoch, the weights differ";
  // Another world size would cut the epoch differently.
  const testing::CliResult other =
      run_ddpx(common + " --steps 14 --resume " + ckpt.string() + " --nproc-per-node 2 --backend gloo --comm-timeout 60");
  EXPECT_NE(other.status, 0);
  EXPECT_NE(other.output.find("stopped at epoch 1, batch 2 of 10 with 1 rank(s); this run has 2: resume with 1 rank(s)"),
            std::string::npos) << other.output;
}

TEST(ImageTraining, RandAugmentTrainsDeterministicallyAndBadValuesAreRefused) {
  if (!fs::exists(fs::path(kFashion) / "t10k-images-idx3-ubyte.gz")) GTEST_SKIP() << "dataset-fashion-mnist missing";
  const std::string common = "train --device cpu --model " + kModel + " --data idx:" + std::string(kFashion) +
                             ":test --batch 500 --steps 6 --optimizer adamw --lr 0.01 --warmup 0 --seed 3";
  const fs::path a = scratch("ra_a.safetensors"), b = scratch("ra_b.safetensors"), plain = scratch("ra_plain.safetensors");
  const testing::CliResult first = run_ddpx(common + " --randaugment 2,9 --workers 1 --save " + a.string());
  ASSERT_EQ(first.status, 0) << first.output;
  EXPECT_NE(first.output.find("+ RandAugment(num_ops=2, magnitude=9)"), std::string::npos) << first.output;
  EXPECT_NE(first.output.find("step      6/6"), std::string::npos) << first.output;
  // The same seed with another loader worker count: the same augmented batches, so the same weights.
  const testing::CliResult second = run_ddpx(common + " --randaugment 2,9 --workers 3 --save " + b.string());
  ASSERT_EQ(second.status, 0) << second.output;
  EXPECT_EQ(saved_weights(a, kModel), saved_weights(b, kModel));
  const testing::CliResult without = run_ddpx(common + " --workers 2 --save " + plain.string());
  ASSERT_EQ(without.status, 0) << without.output;
  EXPECT_EQ(without.output.find("RandAugment"), std::string::npos) << without.output;
  EXPECT_NE(saved_weights(a, kModel), saved_weights(plain, kModel)) << "--randaugment changed nothing";
  const testing::CliResult magnitude = run_ddpx(common + " --randaugment 2,31");
  EXPECT_NE(magnitude.status, 0);
  EXPECT_NE(magnitude.output.find("--randaugment '2,31': the magnitude M = 31 must be 0 to 30"), std::string::npos)
      << magnitude.output;
  const testing::CliResult synthetic =
      run_ddpx("train --device cpu --model " + kModel + " --data learnable --steps 2 --randaugment 2,9");
  EXPECT_NE(synthetic.status, 0);
  EXPECT_NE(synthetic.output.find("--randaugment 2,9 augments the images the loader decodes: it needs an image source"),
            std::string::npos) << synthetic.output;
}

TEST(ImageTraining, EpochsSetTheStepsFromTheBatchesEveryRankRuns) {
  if (!fs::exists(fs::path(kFashion) / "t10k-images-idx3-ubyte.gz")) GTEST_SKIP() << "dataset-fashion-mnist missing";
  // 10,000 images, batch 3000: floor(10000 / 3000) = 3 batches per epoch; 2 epochs with --grad-accum 2: 3 steps.
  const testing::CliResult r = run_ddpx("train --device cpu --model " + kModel + " --data idx:" + std::string(kFashion) +
                                        ":test --batch 3000 --epochs 2 --grad-accum 2 --warmup 0 --workers 1");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("step      3/3"), std::string::npos) << r.output;
  const testing::CliResult both = run_ddpx("train --device cpu --model " + kModel + " --data idx:" + std::string(kFashion) +
                                           ":test --epochs 1 --steps 5");
  EXPECT_NE(both.output.find("--epochs 1 and --steps 5: give one"), std::string::npos) << both.output;
  const testing::CliResult endless = run_ddpx("train --device cpu --model " + kModel + " --data learnable --epochs 1");
  EXPECT_NE(endless.output.find("--epochs 1 needs data with epochs"), std::string::npos) << endless.output;
}

TEST(ImageTraining, TwoRanksOfBatchBEqualOneRankOfTwoB) {
#ifndef DDPX_HAVE_GLOO
  GTEST_SKIP() << "built without Gloo (libgloo-dev): this CPU run of several ranks needs --backend gloo";
#endif
  if (!fs::exists(fs::path(kFashion) / "t10k-images-idx3-ubyte.gz")) GTEST_SKIP() << "dataset-fashion-mnist missing";
  // A raw pack of the test split, with crop-flip augmentation: the samples a folder of the same images gives, bit
  // for bit (tests/data/test_folder_pack.cpp), through the path folder: and pack: share.
  const fs::path pack = scratch("fashion-test.pack");
  const testing::CliResult packed = run_ddpx("pack idx:" + std::string(kFashion) + ":test " + pack.string() + " --store raw");
  ASSERT_EQ(packed.status, 0) << packed.output;
  const std::string common = "train --device cpu --model " + kModel + " --data pack:" + pack.string() +
                             " --augment crop-flip --steps 6 --warmup 0 --lr 0.05 --momentum 0.9 --workers 1 --seed 3"
                             " --comm-timeout 60";
  const fs::path one = scratch("one.safetensors"), two = scratch("two.safetensors");
  const testing::CliResult single = run_ddpx(common + " --batch 64 --save " + one.string());
  ASSERT_EQ(single.status, 0) << single.output;
  const testing::CliResult pair = run_ddpx(common + " --batch 32 --nproc-per-node 2 --backend gloo --save " + two.string());
  ASSERT_EQ(pair.status, 0) << pair.output;
  const std::vector<float> a = saved_weights(one, kModel), b = saved_weights(two, kModel);
  ASSERT_EQ(a.size(), b.size());
  double worst = 0, moved = 0;
  const std::unique_ptr<Model> m = make_model(kModel);
  std::vector<float> initial(a.size());
  m->init_params(initial.data(), 3);
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, double(std::fabs(a[i] - b[i])));
    moved = std::max(moved, double(std::fabs(a[i] - initial[i])));
  }
  EXPECT_LT(worst, 2e-5);  // per-rank means then their average vs one mean over 64: fp32 rounding only
  EXPECT_GT(moved, 1e-2);  // training moved the weights far more than the tolerance
}

// --normalize device (uint8 batches copied and normalized by kernels/normalize_pixels.cu) trains the same weights as
// the host's float batches, up to the kernel's 1e-6 per input value. GPU test: skips without a GPU.
TEST(ImageTraining, DeviceNormalizationTrainsAsHostNormalization) {
  DDPX_REQUIRE_GPU();
  if (!fs::exists(fs::path(kFashion) / "t10k-images-idx3-ubyte.gz")) GTEST_SKIP() << "dataset-fashion-mnist missing";
  const std::string common = "train --device cuda --precision fp32 --cuda-graph off --model " + kModel +
                             " --data idx:" + std::string(kFashion) + ":test --batch 256 --steps 8 --warmup 0 "
                             "--lr 0.05 --workers 2 --seed 9";
  const fs::path host = scratch("host.safetensors"), device = scratch("device.safetensors");
  const testing::CliResult a = run_ddpx(common + " --normalize host --save " + host.string());
  ASSERT_EQ(a.status, 0) << a.output;
  const testing::CliResult b = run_ddpx(common + " --normalize device --save " + device.string());
  ASSERT_EQ(b.status, 0) << b.output;
  const std::vector<float> x = saved_weights(host, kModel), y = saved_weights(device, kModel);
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, double(std::fabs(x[i] - y[i])));
  EXPECT_LT(worst, 1e-4);
}

}  // namespace
}  // namespace ddpx
