// folder: and pack: against idx: on real data: Fashion-MNIST images written here as an ImageFolder of PNGs (and
// photographs as baseline, progressive, gray and CMYK JPEGs), packed raw and as JPEG; the same images and labels
// come out of every path (raw: bit for bit, through the sampler and the random crops too; JPEG: within its
// stated tolerance). Bad folders and damaged packs are refused naming the file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "data/data_sources.hpp"
#include "data/folder_source.hpp"
#include "data/image_dataset.hpp"
#include "data/idx_source.hpp"
#include "data/image_pipeline.hpp"
#include "data/pack_source.hpp"
#include "data/pack_writer.hpp"
#include "error_expect.hpp"
#include "image_files.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;
const char* const kFashion = "/usr/share/datasets/fashion-mnist";

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / ("ddpx_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

// The first `count` Fashion-MNIST training images as DIR/<label>/<index>.png (labels 0..9 are the class names, so
// the sorted class list maps back to the same labels).
void write_fashion_folder(const IdxSource& idx, const fs::path& dir, int count) {
  std::vector<uint8_t> scratch;
  for (int i = 0; i < count; ++i) {
    const SampleBytes b = idx.read(i, scratch);
    testing::Pixels pixels{std::vector<uint8_t>(b.data, b.data + b.size), b.height, b.width, 1};
    testing::write_file((dir / std::to_string(idx.label(i)) / (std::to_string(1000 + i) + ".png")).string(),
                        testing::encode_png(pixels));
  }
}

std::vector<uint8_t> pixels_of(const SampleSource& source, int64_t index, int size, int channels) {
  TransformSpec spec;
  spec.crop_flip = false;
  spec.size = size;
  spec.resize = size;
  spec.channels = channels;
  spec.dct_scaling = false;
  PipelineScratch scratch;
  Rng rng(0);
  std::vector<uint8_t> out(size_t(size * size * channels));
  transform_sample(source, index, spec, rng, scratch, out.data());
  return out;
}

TEST(FolderAndPack, FashionMnistIsTheSameThroughIdxFolderAndPacks) {
  if (!fs::exists(fs::path(kFashion) / "train-images-idx3-ubyte.gz")) GTEST_SKIP() << "dataset-fashion-mnist missing";
  const TempDir dir("fashion_folder");
  const IdxSource idx(kFashion, DataSplit::train, DataOrigin::train_data);
  write_fashion_folder(idx, dir.path / "train", 60);
  const FolderSource folder((dir.path / "train").string(), DataOrigin::train_data);
  ASSERT_EQ(folder.size(), 60);
  EXPECT_EQ(folder.class_names(), (std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}));
  PackOptions raw;
  raw.storage = PackStorage::raw;
  write_pack(folder, (dir.path / "raw.pack").string(), raw);
  PackOptions jpeg;
  jpeg.jpeg_quality = 95;
  write_pack(folder, (dir.path / "jpeg.pack").string(), jpeg);
  const PackSource raw_pack((dir.path / "raw.pack").string(), DataOrigin::train_data);
  const PackSource jpeg_pack((dir.path / "jpeg.pack").string(), DataOrigin::train_data);
  EXPECT_EQ(raw_pack.class_names(), folder.class_names());
  EXPECT_TRUE(raw_pack.photographs());  // a folder's images: crop-flip by default, as the folder's
  for (int64_t i = 0; i < folder.size(); ++i) {
    // The folder's file name holds the idx index it came from.
    const int64_t from = std::stoll(fs::path(folder.sample_name(i)).stem().string()) - 1000;
    EXPECT_EQ(folder.label(i), idx.label(from));
    EXPECT_EQ(raw_pack.label(i), idx.label(from));
    EXPECT_EQ(jpeg_pack.label(i), idx.label(from));
    const std::vector<uint8_t> want = pixels_of(idx, from, 28, 1);
    EXPECT_EQ(pixels_of(folder, i, 28, 1), want) << i;
    EXPECT_EQ(pixels_of(raw_pack, i, 28, 1), want) << i;
    const std::vector<uint8_t> lossy = pixels_of(jpeg_pack, i, 28, 1);
    double total = 0;
    for (size_t k = 0; k < want.size(); ++k) total += std::abs(int(lossy[k]) - int(want[k]));
    EXPECT_LT(total / double(want.size()), 4.0) << i;  // JPEG q95 of 28x28 clothing: mean error under 4 levels
  }
}

TEST(FolderAndPack, ABatchFromAFolderEqualsTheSameBatchFromItsRawPack) {
  const testing::Pixels photo = testing::skimage_photograph("chelsea.png");
  if (photo.data.empty()) GTEST_SKIP() << "python3-skimage's photographs are missing";
  const TempDir dir("photo_folder");
  // Two classes of real photographs at several sizes, every JPEG kind, and PNG.
  int n = 0;
  for (const auto& [h, w] : std::vector<std::pair<int, int>>{{300, 451}, {150, 225}, {97, 131}, {64, 48}})
    for (testing::JpegKind kind : {testing::JpegKind::baseline, testing::JpegKind::progressive,
                                   testing::JpegKind::gray, testing::JpegKind::cmyk}) {
      const testing::Pixels small = testing::shrink(photo, h, w);
      testing::write_file((dir.path / "cat" / ("c" + std::to_string(n++) + ".jpg")).string(), testing::encode_jpeg(small, 90, kind));
      testing::write_file((dir.path / "other" / "deeper" / ("o" + std::to_string(n++) + ".png")).string(), testing::encode_png(small));
    }
  const DataSpec folder_spec = parse_data_spec("folder:" + dir.path.string(), DataOrigin::train_data);
  const std::unique_ptr<SampleSource> folder = open_sample_source(folder_spec);
  ASSERT_EQ(folder->size(), 32);
  EXPECT_EQ(folder->class_names(), (std::vector<std::string>{"cat", "other"}));
  PackOptions raw;
  raw.storage = PackStorage::raw;
  write_pack(*folder, (dir.path.string() + ".pack"), raw);
  DatasetContext context;
  context.shape = DataShape{3, 32, 2};
  context.seed = 8;
  context.images.augmentation = Augmentation::crop_flip;
  context.images.dct_scaling = false;
  const std::unique_ptr<Dataset> from_folder = make_dataset(folder_spec, context);
  const std::unique_ptr<Dataset> from_pack = make_dataset(parse_data_spec("pack:" + dir.path.string() + ".pack", DataOrigin::train_data), context);
  // A raw pack stores each image's full decode, so without DCT-scaled JPEG decoding (an approximation, see
  // test_image_decode) the folder's random crops and the pack's are the same pixels: every batch equal, bit for bit.
  std::vector<uint8_t> a(4 * 32 * 32 * 3), b(a.size());
  std::vector<int32_t> la(4), lb(4);
  for (int64_t step = 0; step < 8; ++step) {  // two epochs of 4 batches per rank
    from_folder->fill_pixels(step, 1, 2, 4, a.data(), la.data());
    from_pack->fill_pixels(step, 1, 2, 4, b.data(), lb.data());
    EXPECT_EQ(la, lb) << step;
    EXPECT_EQ(a, b) << step;
  }
  fs::remove(dir.path.string() + ".pack");
}

TEST(FolderAndPack, BadFoldersAreRefusedNamingTheFolderOrFile) {
  const TempDir dir("bad_folder");
  expect_error([&] { FolderSource s(dir.path.string(), DataOrigin::train_data); }, {"holds no class folders", "ImageFolder"});
  fs::create_directories(dir.path / "a");
  fs::create_directories(dir.path / "b");
  testing::write_file((dir.path / "a" / "x.png").string(), testing::read_file(std::string(DDPX_SOURCE_DIR) + "/tests/fixtures/images/rgb.png"));
  expect_error([&] { FolderSource s(dir.path.string(), DataOrigin::train_data); }, {"class folder", "/b holds no .jpg, .jpeg or .png file"});
  testing::write_file((dir.path / "b" / "y.bmp").string(), {'B', 'M'});
  expect_error([&] { FolderSource s(dir.path.string(), DataOrigin::train_data); }, {"y.bmp", ".bmp images are not read by ddpx", "convert"});
  fs::remove(dir.path / "b" / "y.bmp");
  testing::write_file((dir.path / "b" / "notes.jpg").string(), {'h', 'e', 'l', 'l', 'o'});
  const FolderSource folder(dir.path.string(), DataOrigin::train_data);  // listing is fine; the file fails when read
  std::vector<uint8_t> scratch;
  expect_error([&] { folder.read(1, scratch); }, {"notes.jpg: not a JPEG or PNG image (5 bytes", "replace or remove"});
  fs::remove(dir.path / "b" / "notes.jpg");
  expect_error([&] { folder.read(1, scratch); }, {"notes.jpg': No such file", "restore it, or remove it"});
}

TEST(FolderAndPack, ALabelOutsideTheModelsClassesNamesTheFileAndItsClass) {
  const TempDir dir("three_classes");
  const std::vector<uint8_t> png = testing::read_file(std::string(DDPX_SOURCE_DIR) + "/tests/fixtures/images/rgb.png");
  for (const char* name : {"cat", "dog", "fox"}) testing::write_file((dir.path / name / "a.png").string(), png);
  DatasetContext context;
  context.shape = DataShape{3, 8, 2};
  const DataSpec spec = parse_data_spec("folder:" + dir.path.string(), DataOrigin::train_data);
  expect_error([&] { make_dataset(spec, context); },
               {"--data folder:", (dir.path / "fox" / "a.png").string(), "has label 2 (class 'fox')",
                "the model has 2 classes", "the data has 3 classes", "classes=3"});
  context.shape.num_classes = 3;
  EXPECT_EQ(make_dataset(spec, context)->class_names(), (std::vector<std::string>{"cat", "dog", "fox"}));
}

TEST(FolderAndPack, DamagedPacksAreRefusedNamingTheFile) {
  const TempDir dir("bad_pack");
  fs::create_directories(dir.path / "src" / "a");
  for (int i = 0; i < 3; ++i)
    testing::write_file((dir.path / "src" / "a" / (std::to_string(i) + ".png")).string(),
                        testing::read_file(std::string(DDPX_SOURCE_DIR) + "/tests/fixtures/images/rgb.png"));
  const FolderSource folder((dir.path / "src").string(), DataOrigin::train_data);
  PackOptions raw;
  raw.storage = PackStorage::raw;
  const std::string path = (dir.path / "p.pack").string();
  write_pack(folder, path, raw);
  const std::vector<uint8_t> good = testing::read_file(path);
  const auto with = [&](size_t offset, uint8_t value) {
    std::vector<uint8_t> bytes = good;
    bytes[offset] = value;
    testing::write_file(path, bytes);
  };
  { const PackSource ok(path, DataOrigin::train_data); EXPECT_EQ(ok.size(), 3); }
  with(8, 7);  // the preamble's version
  expect_error([&] { PackSource p(path, DataOrigin::train_data); }, {path, "format version 7, this ddpx reads version 1", "repack"});
  with(16 + 5, uint8_t(good[16 + 5] ^ 0xFF));  // a byte of record 0
  {
    const PackSource p(path, DataOrigin::train_data);  // the index is fine: opening works
    std::vector<uint8_t> scratch;
    expect_error([&] { p.read(0, scratch); }, {path, "record 0 fails its checksum", "repack"});
    EXPECT_NO_THROW(p.read(1, scratch));
  }
  const uint64_t index_offset = good.size() - 128 - 3 * 32 - 2;  // classes "a\n": 2 bytes
  with(size_t(index_offset + 12), 9);  // a label in the index
  expect_error([&] { PackSource p(path, DataOrigin::train_data); }, {"index's checksum does not match"});
  std::vector<uint8_t> cut(good.begin(), good.end() - 50);
  testing::write_file(path, cut);
  expect_error([&] { PackSource p(path, DataOrigin::train_data); }, {"no pack trailer", "cut short", "ddpx pack"});
}

}  // namespace
}  // namespace ddpx
