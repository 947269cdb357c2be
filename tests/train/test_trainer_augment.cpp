// torchvision's recipe augmentations in `ddpx train` end to end on the CPU (--trivial-augment,
// --auto-augment-policy, --random-erase): on a folder of Fashion-MNIST PNGs with --epochs and --val, the same
// weights whatever the loader's worker count, other weights than without them, 2 ranks of batch b equal to 1 rank
// of 2b (the draws are keyed by the sample's place in the epoch, not by rank); on idx with --steps, a run killed
// mid-run and resumed equals the uninterrupted one bit for bit; two automatic augmentations, an unknown policy, a
// bad probability, an empty value, a non-image source and --random-erase with --normalize device (the erasing is on the host's
// float image) are refused naming the flags. (--val is never augmented:
// tests/data/test_auto_augment.cpp and test_random_erasing.cpp compare its batches.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include "cli_runner.hpp"
#include "data/data_spec.hpp"
#include "data/random_erasing.hpp"
#include "error_expect.hpp"
#include "fashion_files.hpp"
#include "saved_weights.hpp"
#include "support/scratch_dir.hpp"
#include "train/train_options.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::run_ddpx;
using testing::saved_weights;

const std::string kModel = "mlp:image=28,channels=1,layers=1,width=32,classes=10";

double largest_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, double(std::fabs(a[i] - b[i])));
  return worst;
}

TEST(AugmentTraining, FolderWithEpochsAndValTrainsTheSameWhateverTheWorkersAndOnTwoRanks) {
  if (!testing::fashion_mnist_installed()) GTEST_SKIP() << "dataset-fashion-mnist missing";
  const fs::path dir = testing::fresh_dir("train", "augment_folder");
  testing::write_fashion_folder(dir / "train", DataSplit::train, 400);
  testing::write_fashion_folder(dir / "val", DataSplit::test, 200);
  // 400 images, batch 40: 10 batches per epoch, 2 epochs = 20 steps.
  const std::string common = "train --device cpu --model " + kModel + " --data folder:" + (dir / "train").string() +
                             " --val folder:" + (dir / "val").string() +
                             " --epochs 2 --optimizer adamw --lr 0.01 --warmup 0 --seed 4 --comm-timeout 60";
  const std::string augments = " --trivial-augment --random-erase 0.5";
  const fs::path a = dir / "a.safetensors", b = dir / "b.safetensors", plain = dir / "plain.safetensors";
  const CliResult first = run_ddpx(common + augments + " --batch 40 --workers 1 --save " + a.string());
  ASSERT_EQ(first.status, 0) << first.output;
  EXPECT_NE(first.output.find("+ TrivialAugmentWide(num_magnitude_bins=31) + Normalize + RandomErasing(p=0.5)"),
            std::string::npos) << first.output;
  EXPECT_NE(first.output.find("step     20/20"), std::string::npos) << first.output;
  EXPECT_NE(first.output.find("val loss"), std::string::npos) << first.output;
  const CliResult second = run_ddpx(common + augments + " --batch 40 --workers 3 --save " + b.string());
  ASSERT_EQ(second.status, 0) << second.output;
  EXPECT_EQ(saved_weights(a, kModel), saved_weights(b, kModel)) << "the worker count changed the augmented batches";
  const CliResult without = run_ddpx(common + " --batch 40 --workers 2 --save " + plain.string());
  ASSERT_EQ(without.status, 0) << without.output;
  EXPECT_EQ(without.output.find("TrivialAugmentWide"), std::string::npos) << without.output;
  EXPECT_NE(saved_weights(a, kModel), saved_weights(plain, kModel)) << "the augmentations changed nothing";
  // AutoAugment with erasing, also trains.
  const CliResult policy =
      run_ddpx(common + " --auto-augment-policy imagenet --random-erase 0.25 --batch 40 --workers 2");
  ASSERT_EQ(policy.status, 0) << policy.output;
  EXPECT_NE(policy.output.find("+ AutoAugment(policy=imagenet) + Normalize + RandomErasing(p=0.25)"),
            std::string::npos) << policy.output;
#ifdef DDPX_HAVE_GLOO
  // 2 ranks of batch 20: the samples, crops, ops and boxes of 1 rank's batch of 40, so the same weights up to the
  // order of the fp32 sums.
  const fs::path two = dir / "two.safetensors";
  const CliResult pair =
      run_ddpx(common + augments + " --batch 20 --nproc-per-node 2 --backend gloo --workers 1 --save " + two.string());
  ASSERT_EQ(pair.status, 0) << pair.output;
  const std::vector<float> one_rank = saved_weights(a, kModel), two_ranks = saved_weights(two, kModel);
  EXPECT_LT(largest_difference(one_rank, two_ranks), 2e-5);
  EXPECT_GT(largest_difference(one_rank, saved_weights(plain, kModel)), 1e-3);  // far beyond that tolerance
#endif
  fs::remove_all(dir);
}

TEST(AugmentTraining, KilledAndResumedEqualsTheUninterruptedRunAndBadFlagsAreRefused) {
  if (!testing::fashion_mnist_installed()) GTEST_SKIP() << "dataset-fashion-mnist missing";
  const fs::path dir = testing::fresh_dir("train", "augment_resume");
  // t10k: 10,000 images, batch 1000: 10 batches per epoch; 12 steps cross the first epoch's end.
  const std::string common = "train --device cpu --model " + kModel + " --data idx:" + testing::kFashionMnist +
                             ":test --batch 1000 --optimizer adamw --lr 0.01 --workers 2 --warmup 0 --seed 6"
                             " --auto-augment-policy imagenet --random-erase 0.25"
                             " --ddp";  // the reducer at one rank (the same weights) has the step-K fault point
  const fs::path full = dir / "full.safetensors", resumed = dir / "resumed.safetensors", ckpt = dir / "ckpt";
  const CliResult a = run_ddpx(common + " --steps 12 --save " + full.string());
  ASSERT_EQ(a.status, 0) << a.output;
  const CliResult killed = run_ddpx(common + " --steps 12 --checkpoint-dir " + ckpt.string() + " --checkpoint-every 4",
                                    "DDPX_TEST_FAULT=step-12:0:kill");
  ASSERT_NE(killed.status, 0) << killed.output;
  const CliResult b = run_ddpx(common + " --steps 12 --resume " + ckpt.string() + " --save " + resumed.string());
  ASSERT_EQ(b.status, 0) << b.output;
  EXPECT_EQ(saved_weights(full, kModel), saved_weights(resumed, kModel)) << "resumed, the weights differ";

  const std::string idx = "train --device cpu --model " + kModel + " --data idx:" + testing::kFashionMnist +
                          ":test --steps 2 --batch 100";
  const CliResult two = run_ddpx(idx + " --randaugment 2,9 --trivial-augment");
  EXPECT_EQ(two.status, 2) << two.output;
  EXPECT_NE(two.output.find("--randaugment 2,9 and --trivial-augment: give one automatic augmentation per run"),
            std::string::npos) << two.output;
  const CliResult policy = run_ddpx(idx + " --auto-augment-policy imagenet2");
  EXPECT_EQ(policy.status, 2) << policy.output;
  EXPECT_NE(policy.output.find("--auto-augment-policy 'imagenet2' is not known"), std::string::npos) << policy.output;
  const CliResult odds = run_ddpx(idx + " --random-erase 1.5");
  EXPECT_EQ(odds.status, 2) << odds.output;
  EXPECT_NE(odds.output.find("--random-erase '1.5': give the probability P"), std::string::npos) << odds.output;
  for (const char* flag : {"--auto-augment-policy", "--random-erase", "--randaugment"}) {
    const CliResult empty = run_ddpx(idx + " " + flag + " ''");  // typed but empty: not silently off
    EXPECT_EQ(empty.status, 2) << empty.output;
    EXPECT_NE(empty.output.find(std::string(flag) + ": an empty value would silently mean off"), std::string::npos)
        << empty.output;
  }
  const CliResult synthetic = run_ddpx("train --device cpu --model " + kModel + " --data learnable --steps 2 "
                                       "--trivial-augment --random-erase 0.3");
  EXPECT_EQ(synthetic.status, 2) << synthetic.output;
  EXPECT_NE(synthetic.output.find("--trivial-augment augments the images the loader decodes: it needs an image "
                                  "source"), std::string::npos) << synthetic.output;
  const CliResult erase_only =
      run_ddpx("train --device cpu --model " + kModel + " --data learnable --steps 2 --random-erase 0.3");
  EXPECT_EQ(erase_only.status, 2) << erase_only.output;
  EXPECT_NE(erase_only.output.find("--random-erase 0.3 erases part of the images the loader decodes"),
            std::string::npos) << erase_only.output;
  fs::remove_all(dir);
}

// A CUDA run that normalizes on the device gets uint8 batches: the erasing (after Normalize, on the loader threads)
// would not happen there, so the two are refused together; host normalization (the default) takes it.
TEST(AugmentTraining, RandomErasingWithDeviceNormalizationIsRefused) {
  TrainOptions options;
  options.device = Device::cuda;
  options.data = parse_data_spec(std::string("idx:") + testing::kFashionMnist + ":test", DataOrigin::train_data);
  options.image_pipeline.random_erasing = parse_random_erase("0.25");
  options.normalize_on = NormalizeOn::device;
  testing::expect_error([&] { options.validate(); },
                        {"--random-erase 0.25 with --normalize device", "drop --normalize device"});
  options.normalize_on = NormalizeOn::host;
  EXPECT_NO_THROW(options.validate());
}

}  // namespace
}  // namespace ddpx
