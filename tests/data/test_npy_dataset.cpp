// .npy training data in epochs (issue 40): real files written here, read through NpyDataset. Every epoch takes the
// images in order, each rank drops its last partial batch instead of wrapping into the next images, W ranks x b hold
// the images of 1 rank x W*b, and a --batch larger than a rank's share is refused naming --batch and the sizes.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "data/npy_dataset.hpp"
#include "io/io_test_support.hpp"
#include "io/npy.hpp"

namespace ddpx {
namespace {

using testing::expect_error;
using testing::TempDir;

const DataShape kShape{.channels = 1, .image_size = 2, .num_classes = 100};

// n images of 1 x 2 x 2 whose every pixel is the image's index, label index % 100: a filled batch says which
// images it holds.
NpyDataset write_and_open(const TempDir& dir, int64_t n) {
  std::vector<float> pixels;
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < n; ++i) {
    pixels.insert(pixels.end(), 4, static_cast<float>(i));
    labels.push_back(i % 100);
  }
  write_npy(dir / "x.npy", HostTensor::from_values<float>({n, 1, 2, 2}, pixels));
  write_npy(dir / "y.npy", HostTensor::from_values<int64_t>({n}, labels));
  return NpyDataset((dir / "x.npy").string(), (dir / "y.npy").string(), kShape);
}

// The image indices of micro-batch `step` on `rank`, checking that every pixel and the label agree with the index.
std::vector<int64_t> batch_indices(const NpyDataset& data, int64_t step, int rank, int world, int64_t batch) {
  std::vector<float> images(static_cast<size_t>(batch * 4), -1.f);
  std::vector<int32_t> labels(static_cast<size_t>(batch), -1);
  data.fill_batch(step, rank, world, batch, images.data(), labels.data());
  std::vector<int64_t> indices;
  for (int64_t b = 0; b < batch; ++b) {
    const float index = images[static_cast<size_t>(b * 4)];
    for (int p = 1; p < 4; ++p) EXPECT_EQ(images[static_cast<size_t>(b * 4 + p)], index);
    EXPECT_EQ(labels[static_cast<size_t>(b)], static_cast<int32_t>(index) % 100);
    indices.push_back(static_cast<int64_t>(index));
  }
  return indices;
}

TEST(NpyDataset, BatchNotDividingTheDataDropsTheRestInsteadOfRepeatingImages) {
  TempDir dir;
  const NpyDataset data = write_and_open(dir, 10);
  EXPECT_EQ(data.batches_per_epoch(1, 4), 2);  // 10 images: two batches of 4, images 8 and 9 dropped
  EXPECT_EQ(batch_indices(data, 0, 0, 1, 4), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(batch_indices(data, 1, 0, 1, 4), (std::vector<int64_t>{4, 5, 6, 7}));
  // Before: micro-batch 2 held 8, 9, 0, 1 (the wrap repeated 0 and 1 inside the epoch); now epoch 1 starts over.
  EXPECT_EQ(batch_indices(data, 2, 0, 1, 4), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(batch_indices(data, 5, 0, 1, 4), (std::vector<int64_t>{4, 5, 6, 7}));
}

TEST(NpyDataset, RanksTakeDisjointSharesAndTogetherHoldOneRankWithTheWholeBatch) {
  TempDir dir;
  const NpyDataset data = write_and_open(dir, 24);
  const int world = 3;
  const int64_t batch = 2;
  ASSERT_EQ(data.batches_per_epoch(world, batch), 4);  // 8 images per rank, 4 batches of 2
  for (int64_t step = 0; step < 8; ++step) {  // two epochs
    std::multiset<int64_t> across_ranks;
    for (int rank = 0; rank < world; ++rank)
      for (int64_t index : batch_indices(data, step, rank, world, batch)) {
        EXPECT_EQ(index % world, rank);  // DistributedSampler without shuffle: rank r takes r, r+W, ...
        across_ranks.insert(index);
      }
    const std::vector<int64_t> whole = batch_indices(data, step, 0, 1, world * batch);
    EXPECT_EQ(across_ranks, std::multiset<int64_t>(whole.begin(), whole.end())) << "step " << step;
    EXPECT_EQ(across_ranks.size(), std::set<int64_t>(whole.begin(), whole.end()).size());  // no image twice
  }
}

TEST(NpyDataset, BatchLargerThanOneRanksShareIsRefusedNamingBatchAndTheSizes) {
  TempDir dir;
  const NpyDataset data = write_and_open(dir, 10);
  const std::string images = (dir / "x.npy").string();
  expect_error([&] { data.batches_per_epoch(1, 16); },
               {"--images " + images, "10 samples over 1 rank(s)", "--batch of 16", "lower --batch to 10 or less"});
  // 10 images over 4 ranks: 3 each (DistributedSampler pads 10 to 12), so --batch 4 does not fit but 3 does.
  expect_error([&] { data.fill_batch(0, 0, 4, 4, nullptr, nullptr); },
               {"10 samples over 4 rank(s) give each rank 3", "--batch of 4", "lower --batch to 3 or less"});
  EXPECT_EQ(data.batches_per_epoch(4, 3), 1);
}

}  // namespace
}  // namespace ddpx
