// idx: Debian's Fashion-MNIST reads with the known counts and labels; small idx files written here, plain and
// gzipped, read back exactly; damaged files are refused naming the file; an ImageDataset over idx gives the raw
// images (resize to the same size is the identity), normalized as torchvision's ToTensor + Normalize.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

#include "data/data_sources.hpp"
#include "data/idx_source.hpp"
#include <unistd.h>
#include "data/image_dataset.hpp"
#include "data/pixel_normalization.hpp"
#include "error_expect.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;
const char* const kFashion = "/usr/share/datasets/fashion-mnist";

std::vector<uint8_t> big_endian(uint32_t v) {
  return {uint8_t(v >> 24), uint8_t(v >> 16), uint8_t(v >> 8), uint8_t(v)};
}

struct TinyIdx {
  fs::path dir;
  std::vector<uint8_t> pixels, labels;
  int count = 6, height = 5, width = 4;
  explicit TinyIdx(const std::string& name, bool gzip) {
    dir = fs::temp_directory_path() / ("ddpx_idx_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (int i = 0; i < count * height * width; ++i) pixels.push_back(uint8_t((i * 29) % 256));
    for (int i = 0; i < count; ++i) labels.push_back(uint8_t(i % 3));
    std::vector<uint8_t> images_file = big_endian(0x803), labels_file = big_endian(0x801);
    for (uint32_t v : {uint32_t(count), uint32_t(height), uint32_t(width)})
      for (uint8_t b : big_endian(v)) images_file.push_back(b);
    images_file.insert(images_file.end(), pixels.begin(), pixels.end());
    for (uint8_t b : big_endian(count)) labels_file.push_back(b);
    labels_file.insert(labels_file.end(), labels.begin(), labels.end());
    write("train-images-idx3-ubyte", images_file, gzip);
    write("train-labels-idx1-ubyte", labels_file, gzip);
  }
  ~TinyIdx() { fs::remove_all(dir); }
  void write(const std::string& name, const std::vector<uint8_t>& bytes, bool gzip) const {
    if (gzip) {
      gzFile f = gzopen((dir / (name + ".gz")).c_str(), "wb");
      gzwrite(f, bytes.data(), unsigned(bytes.size()));
      gzclose(f);
    } else {
      std::ofstream(dir / name, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    }
  }
};

TEST(IdxSource, ReadsPlainAndGzippedFilesExactly) {
  for (bool gzip : {false, true}) {
    const TinyIdx tiny(gzip ? "gz" : "plain", gzip);
    const IdxSource source(tiny.dir.string(), DataSplit::train, DataOrigin::train_data);
    ASSERT_EQ(source.size(), tiny.count);
    EXPECT_EQ(source.num_classes(), 3);
    std::vector<uint8_t> scratch;
    for (int i = 0; i < tiny.count; ++i) {
      const SampleBytes bytes = source.read(i, scratch);
      EXPECT_EQ(bytes.format, SampleFormat::raw);
      EXPECT_EQ(bytes.height, 5);
      EXPECT_EQ(bytes.width, 4);
      EXPECT_EQ(bytes.channels, 1);
      EXPECT_TRUE(std::equal(bytes.data, bytes.data + 20, tiny.pixels.begin() + i * 20));
      EXPECT_EQ(source.label(i), tiny.labels[size_t(i)]);
    }
  }
}

TEST(IdxSource, DamagedOrMissingFilesAreRefusedNamingThem) {
  const TinyIdx tiny("bad", false);
  expect_error([&] { IdxSource(tiny.dir.string(), DataSplit::test, DataOrigin::train_data); },
               {"t10k-images-idx3-ubyte", "is a file", "dataset-fashion-mnist"});
  // Truncated images.
  std::vector<uint8_t> cut = big_endian(0x803);
  for (uint32_t v : {6u, 5u, 4u})
    for (uint8_t b : big_endian(v)) cut.push_back(b);
  cut.resize(cut.size() + 50);
  tiny.write("train-images-idx3-ubyte", cut, false);
  expect_error([&] { IdxSource(tiny.dir.string(), DataSplit::train, DataOrigin::train_data); },
               {"train-images-idx3-ubyte has 66 bytes", "needs 136", "truncated"});
  // Not an idx file at all.
  tiny.write("train-images-idx3-ubyte", {'<', 'h', 't', 'm', 'l', '>', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, false);
  expect_error([&] { IdxSource(tiny.dir.string(), DataSplit::train, DataOrigin::train_data); }, {"is not an idx image file", "magic"});
}

TEST(IdxSource, LabelsCountMismatchIsRefused) {
  const TinyIdx tiny("count", false);
  std::vector<uint8_t> labels = big_endian(0x801);
  for (uint8_t b : big_endian(5)) labels.push_back(b);
  labels.insert(labels.end(), 5, 1);
  tiny.write("train-labels-idx1-ubyte", labels, false);
  expect_error([&] { IdxSource(tiny.dir.string(), DataSplit::train, DataOrigin::train_data); }, {"holds 5 labels", "for the 6 images"});
}

TEST(IdxSource, FashionMnistFromDebian) {
  if (!fs::exists(fs::path(kFashion) / "train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << kFashion << " is missing: apt-get install dataset-fashion-mnist (scripts/install-deps.sh --tests)";
  const IdxSource train(kFashion, DataSplit::train, DataOrigin::train_data);
  const IdxSource test(kFashion, DataSplit::test, DataOrigin::train_data);
  EXPECT_EQ(train.size(), 60000);
  EXPECT_EQ(test.size(), 10000);
  EXPECT_EQ(train.num_classes(), 10);
  // Known values (numpy over the same files): the first labels, and pixel sums of two images.
  EXPECT_EQ(train.label(0), 9);
  EXPECT_EQ(train.label(3), 3);
  EXPECT_EQ(test.label(1), 2);
  std::vector<uint8_t> scratch;
  const auto sum = [&](const IdxSource& s, int64_t i) {
    const SampleBytes b = s.read(i, scratch);
    int64_t total = 0;
    for (size_t k = 0; k < b.size; ++k) total += b.data[k];
    return total;
  };
  EXPECT_EQ(sum(train, 0), 76247);
  EXPECT_EQ(sum(train, 59999), 16684);
}

TEST(ImageDataset, IdxBatchesAreTheImagesCenterCroppedAndNormalized) {
  const TinyIdx tiny("dataset", true);
  DatasetContext context;
  context.training = false;  // --val: no shuffle, so one rank's micro-batch 0 is samples 0..5 in order
  for (int64_t channels : {1, 3}) {
    context.shape = DataShape{channels, 4, 3};
    // 5x4 images, a 4x4 model: Resize(4) keeps 5x4 (scale 1), CenterCrop(4) starts at row round(0.5) = 0.
    const std::unique_ptr<Dataset> data = make_dataset(parse_data_spec("idx:" + tiny.dir.string(), DataOrigin::train_val), context);
    ASSERT_TRUE(data->fills_pixels());
    std::vector<uint8_t> pixels(size_t(6 * 16 * channels));
    std::vector<int32_t> labels(6), labels2(6);
    std::vector<float> images(pixels.size());
    data->fill_pixels(0, 0, 1, 6, pixels.data(), labels.data());
    data->fill_batch(0, 0, 1, 6, images.data(), labels2.data());
    EXPECT_EQ(labels, labels2);
    for (int i = 0; i < 6; ++i) {
      EXPECT_EQ(labels[size_t(i)], tiny.labels[size_t(i)]);
      for (int p = 0; p < 16; ++p)
        for (int64_t c = 0; c < channels; ++c) {
          const uint8_t want = tiny.pixels[size_t(i * 20 + p)];  // rows 0..3 of the 5 rows, all 4 columns
          EXPECT_EQ(pixels[size_t((i * 16 + p) * channels + c)], want) << i << " " << p;
          const float mean = channels == 1 ? 0.449f : std::vector<float>{0.485f, 0.456f, 0.406f}[size_t(c)];
          const float std = channels == 1 ? 0.226f : std::vector<float>{0.229f, 0.224f, 0.225f}[size_t(c)];
          EXPECT_NEAR(images[size_t((i * channels + c) * 16 + p)], (want / 255.0f - mean) / std, 1e-6);
        }
    }
  }
}

TEST(ImageDataset, ShuffledBatchesAreAPureFunctionOfStepRankAndWorld) {
  const TinyIdx tiny("shuffled", false);
  DatasetContext context;
  context.shape = DataShape{1, 4, 3};
  context.seed = 4;
  const DataSpec spec = parse_data_spec("idx:" + tiny.dir.string(), DataOrigin::train_data);
  const std::unique_ptr<Dataset> data = make_dataset(spec, context), again = make_dataset(spec, context);
  EXPECT_EQ(data->batches_per_epoch(2, 3), 1);
  std::vector<uint8_t> a(3 * 16), b(3 * 16);
  std::vector<int32_t> la(3), lb(3);
  std::multiset<int32_t> labels;
  for (int rank = 0; rank < 2; ++rank) {
    data->fill_pixels(0, rank, 2, 3, a.data(), la.data());
    again->fill_pixels(0, rank, 2, 3, b.data(), lb.data());
    EXPECT_EQ(a, b);
    EXPECT_EQ(la, lb);
    labels.insert(la.begin(), la.end());
  }
  EXPECT_EQ(labels, (std::multiset<int32_t>{0, 0, 1, 1, 2, 2}));  // one epoch over 2 ranks: every sample once
}

TEST(ImageDataset, LabelsOutsideTheModelsClassesAreRefused) {
  const TinyIdx tiny("classes", false);
  DatasetContext context;
  context.shape = DataShape{1, 4, 2};  // labels 0..2 need 3 classes
  // Sample 2 is the first with label 2 (labels cycle 0, 1, 2): named by its file and index.
  expect_error([&] { make_dataset(parse_data_spec("idx:" + tiny.dir.string(), DataOrigin::train_data), context); },
               {"train-images-idx3-ubyte image 2 has label 2, but the model has 2 classes (labels 0 to 1)",
                "the data has 3 classes", "classes=3"});
}

TEST(IdxSource, FashionMnistNamesItsClassesAsTorchvisionAndOtherIdxFilesNone) {
  const TinyIdx tiny("unnamed", false);
  EXPECT_TRUE(IdxSource(tiny.dir.string(), DataSplit::train, DataOrigin::train_data).class_names().empty());
  if (!fs::exists(fs::path(kFashion) / "t10k-labels-idx1-ubyte.gz")) GTEST_SKIP() << "dataset-fashion-mnist missing";
  // torchvision.datasets.FashionMNIST.classes
  const std::vector<std::string> names = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                          "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  for (const DataSplit split : {DataSplit::train, DataSplit::test}) {
    const IdxSource fashion(kFashion, split, DataOrigin::train_data);
    EXPECT_EQ(fashion.class_names(), names);
    EXPECT_EQ(fashion.num_classes(), 10);
  }
}

TEST(PixelNormalization, MatchesToTensorThenNormalize) {
  // Two 2x2 RGB images, HWC in, NCHW out.
  std::vector<uint8_t> pixels(2 * 4 * 3);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = uint8_t(i * 11);
  std::vector<float> images(pixels.size());
  const std::vector<float> mean = {0.485f, 0.456f, 0.406f}, std = {0.229f, 0.224f, 0.225f};
  normalize_pixels(pixels.data(), 2, 2, 3, mean, std, images.data());
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int p = 0; p < 4; ++p)
        EXPECT_NEAR(images[size_t((n * 3 + c) * 4 + p)],
                    (pixels[size_t((n * 4 + p) * 3 + c)] / 255.0f - mean[size_t(c)]) / std[size_t(c)], 1e-6);
}

}  // namespace
}  // namespace ddpx
