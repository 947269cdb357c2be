// The loader's pixels on real photographs (scikit-image's, never used to tune the code; issue 50 item 7):
//  - the eval resize side is torchvision's int(size / 0.875) (32 -> 36, not round()'s 37);
//  - the eval transform of a full-size decode, through transform_sample, is within 1 level of torchvision's
//    (tests/fixtures/photographs from tools/make_photograph_fixtures.py: PIL's decode and BILINEAR resize);
//  - the DCT-scaled JPEG decode stays within its documented bound of a full decode (mean |difference| under 1.5
//    levels per image) at 224, 64 and 32, on the eval crop and on RandomResizedCrop's crops, and does scale;
//  - 16-bit PNGs: RGB as PIL reads it, gray from the high byte (where PIL clips to white), as the docs say;
//  - an eval resize side given (torchvision's --val-resize-size) replaces int(size / 0.875) in a folder's eval batch.
// Photographs missing (python3-skimage not installed) or different from the fixtures' skip, naming why.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "data/data_spec.hpp"
#include "data/dataset.hpp"
#include "data/image_decode.hpp"
#include "data/image_pipeline.hpp"
#include "data/image_transform.hpp"
#include "error_expect.hpp"
#include "image_files.hpp"
#include "support/scratch_dir.hpp"

namespace ddpx {
namespace {

const std::string kFixtures = std::string(DDPX_SOURCE_DIR) + "/tests/fixtures/photographs/";
const std::string kSkimage = "/usr/lib/python3/dist-packages/skimage/data/";

nlohmann::json fixture_index() {
  std::ifstream in(kFixtures + "photographs.json");
  return nlohmann::json::parse(in);
}

// One encoded file as a source, read the way the folder source reads its files.
class OneFileSource : public SampleSource {
 public:
  OneFileSource(std::vector<uint8_t> bytes, std::string name) : bytes_(std::move(bytes)), name_(std::move(name)) {}
  std::string describe() const override { return name_; }
  int64_t size() const override { return 1; }
  int32_t label(int64_t) const override { return 0; }
  int64_t num_classes() const override { return 1; }
  std::string sample_name(int64_t) const override { return name_; }
  SampleBytes read(int64_t, std::vector<uint8_t>&) const override {
    SampleBytes bytes;
    bytes.format = bytes_[0] == 0xFF ? SampleFormat::jpeg : SampleFormat::png;
    bytes.data = bytes_.data();
    bytes.size = bytes_.size();
    return bytes;
  }
  bool photographs() const override { return true; }
  std::vector<FileRole> inputs() const override { return {}; }  // bytes in memory: no file to protect
  uint64_t content_hash() const override { return 0; }

 private:
  std::vector<uint8_t> bytes_;
  std::string name_;
};

DecodeRequest request_for(const std::string& name, CropBox box, bool bounds_sampling, int out, bool scaled) {
  DecodeRequest request;
  request.choose_box = [box](int, int) { return box; };
  request.box_bounds_sampling = bounds_sampling;
  request.out_size = out;
  request.dct_scaling = scaled;
  request.max_pixels = int64_t{1} << 40;
  request.name = [name] { return name; };
  return request;
}

std::vector<uint8_t> decode_png_file(const std::string& path, int* height, int* width) {
  const std::vector<uint8_t> bytes = testing::read_file(path);
  std::vector<uint8_t> buffer;
  const DecodedRegion region =
      decode_png(bytes.data(), bytes.size(), request_for(path, {}, false, 1, false), buffer);
  *height = region.view.height, *width = region.view.width;
  std::vector<uint8_t> packed;
  for (int y = 0; y < region.view.height; ++y)
    packed.insert(packed.end(), region.view.pixels + y * region.view.stride,
                  region.view.pixels + y * region.view.stride + region.view.width * region.view.channels);
  return packed;
}

// The photograph's bytes when it is installed and is the file the fixtures were made from; else empty.
std::vector<uint8_t> photograph_bytes(const std::string& name, const nlohmann::json& index) {
  const std::string path = kSkimage + name;
  if (!std::filesystem::exists(path)) return {};
  if (std::filesystem::file_size(path) != index["photographs"][name]["bytes"].get<uintmax_t>()) return {};
  return testing::read_file(path);
}

TEST(PhotographPixels, EvalResizeSideIsTorchvisionsTruncation) {
  EXPECT_EQ(eval_resize_side(224), 256);
  EXPECT_EQ(eval_resize_side(32), 36);  // round() gave 37
  EXPECT_EQ(eval_resize_side(64), 73);
  const std::vector<int> want = fixture_index()["eval_resize"].get<std::vector<int>>();
  ASSERT_EQ(want.size(), 1024u);
  for (int size = 1; size <= 1024; ++size) EXPECT_EQ(eval_resize_side(size), want[size_t(size - 1)]) << size;
}

TEST(PhotographPixels, EvalTransformIsTorchvisionsWithinOneLevel) {
  const nlohmann::json index = fixture_index();
  int checked = 0;
  for (const auto& [name, facts] : index["photographs"].items()) {
    const std::vector<uint8_t> bytes = photograph_bytes(name, index);
    if (bytes.empty()) continue;
    const OneFileSource source(bytes, name);
    for (int size : facts["sizes"].get<std::vector<int>>()) {
      TransformSpec spec;
      spec.crop_flip = false;
      spec.size = size;
      spec.resize = eval_resize_side(size);
      spec.channels = 3;
      spec.dct_scaling = false;  // full-size decodes: torchvision's (PIL's) pixels
      Rng rng(1);
      PipelineScratch scratch;
      std::vector<uint8_t> ours(size_t(size) * size * 3);
      transform_sample(source, 0, spec, rng, scratch, ours.data());
      int height = 0, width = 0;
      const std::string stem = name.substr(0, name.rfind('.'));
      const std::vector<uint8_t> theirs = decode_png_file(kFixtures + stem + "_" + std::to_string(size) + ".png",
                                                          &height, &width);
      ASSERT_EQ(height, size);
      ASSERT_EQ(width, size);
      ASSERT_EQ(theirs.size(), ours.size());
      int worst = 0;
      double total = 0;
      for (size_t i = 0; i < ours.size(); ++i) {
        const int d = std::abs(int(ours[i]) - int(theirs[i]));
        worst = std::max(worst, d);
        total += d;
      }
      EXPECT_LE(worst, 1) << name << " at " << size << ": mean " << total / double(ours.size());
      ++checked;
    }
  }
  if (checked == 0) GTEST_SKIP() << "scikit-image's photographs (python3-skimage) are missing or differ from the "
                                    "fixtures' (tools/make_photograph_fixtures.py)";
  EXPECT_EQ(checked, 16);  // 7 photographs at 64 and 32, two of them at 224 too
}

// Each photograph as a JPEG: the three JPEGs as they are, the PNG photographs encoded at quality 90.
std::vector<std::pair<std::string, std::vector<uint8_t>>> jpeg_photographs(const nlohmann::json& index) {
  std::vector<std::pair<std::string, std::vector<uint8_t>>> jpegs;
  for (const auto& [name, facts] : index["photographs"].items()) {
    std::vector<uint8_t> bytes = photograph_bytes(name, index);
    if (bytes.empty()) continue;
    if (bytes[0] != 0xFF) {
      const testing::Pixels pixels = testing::skimage_photograph(name);
      bytes = testing::encode_jpeg(pixels, 90, testing::JpegKind::baseline);
    }
    jpegs.emplace_back(name, std::move(bytes));
  }
  return jpegs;
}

TEST(PhotographPixels, DctScaledDecodeStaysWithinItsBound) {
  const std::vector<std::pair<std::string, std::vector<uint8_t>>> jpegs = jpeg_photographs(fixture_index());
  if (jpegs.empty()) GTEST_SKIP() << "scikit-image's photographs (python3-skimage) are missing";
  for (int out : {224, 64, 32}) {
    int compared = 0, scaled_count = 0;
    double worst_mean = 0;
    int worst_level = 0;
    std::string worst_what;
    for (const auto& [name, jpeg] : jpegs) {
      std::vector<uint8_t> buffer;
      const DecodedRegion whole =
          decode_jpeg(jpeg.data(), jpeg.size(), request_for(name, {}, false, out, false), buffer);
      const int height = whole.view.height, width = whole.view.width;
      // The eval crop, then eight of RandomResizedCrop's.
      std::vector<std::pair<CropBox, bool>> crops = {
          {center_crop_box(height, width, eval_resize_side(out), out), false}};
      Rng rng(50 + static_cast<uint64_t>(out));
      for (int i = 0; i < 8; ++i) crops.push_back({random_resized_crop_box(height, width, rng), true});
      for (const auto& [box, bounds_sampling] : crops) {
        std::vector<uint8_t> results[2];
        bool was_scaled = false;
        for (int scaled = 0; scaled < 2; ++scaled) {
          const DecodedRegion region = decode_jpeg(jpeg.data(), jpeg.size(),
                                                   request_for(name, box, bounds_sampling, out, scaled == 1), buffer);
          if (scaled) was_scaled = region.box.height < box.height - 1e-9;
          results[scaled].resize(size_t(out) * out * region.view.channels);
          resample(region.view, region.box, out, out, false, results[scaled].data());
        }
        ++compared;
        if (!was_scaled) continue;
        ++scaled_count;
        double total = 0;
        int level = 0;
        for (size_t i = 0; i < results[0].size(); ++i) {
          const int d = std::abs(int(results[0][i]) - int(results[1][i]));
          total += d;
          level = std::max(level, d);
        }
        const double mean = total / double(results[0].size());
        EXPECT_LT(mean, 1.5) << name << " at " << out << ", crop " << box.height << " x " << box.width;
        if (mean > worst_mean) {
          worst_mean = mean;
          worst_what = name + ", crop " + std::to_string(int(box.height)) + " x " + std::to_string(int(box.width));
        }
        worst_level = std::max(worst_level, level);
      }
    }
    // The bound is only tested where decodes were scaled: at every size some crops of these photographs are.
    EXPECT_GT(scaled_count, 0) << out;
    std::printf("out %3d: %2d of %2d crops DCT-scaled; worst mean |difference| %.2f levels (%s), worst pixel %d\n", out,
                scaled_count, compared, worst_mean, worst_what.c_str(), worst_level);
  }
}

TEST(PhotographPixels, SixteenBitPngsAreReadFromTheirHighByte) {
  const nlohmann::json sixteen = fixture_index()["sixteen_bit"];
  for (const std::string name : {"rgb16.png", "gray16.png"}) {
    int height = 0, width = 0;
    const std::vector<uint8_t> ours = decode_png_file(kFixtures + name, &height, &width);
    const std::vector<int> high = sixteen[name]["high_byte"].get<std::vector<int>>();
    const std::vector<int> pil = sixteen[name]["pil_rgb"].get<std::vector<int>>();
    ASSERT_EQ(ours.size(), high.size()) << name;  // 16-bit gray becomes RGB
    for (size_t i = 0; i < ours.size(); ++i) EXPECT_EQ(int(ours[i]), high[i]) << name << " at " << i;
    if (name == "rgb16.png") EXPECT_EQ(high, pil);  // PIL reads 16-bit RGB from the high byte too
    else EXPECT_NE(high, pil);                      // and clips 16-bit gray: the documented difference
  }
}

TEST(PhotographPixels, AGivenEvalResizeSideReplacesTheDefault) {
  const testing::Pixels photo = testing::skimage_photograph("coffee.png");
  if (photo.data.empty()) GTEST_SKIP() << "scikit-image's photographs (python3-skimage) are missing";
  const testing::ScratchDir dir("ddpx-eval-resize");
  const std::vector<uint8_t> png = testing::encode_png(photo);
  testing::write_file((dir.path() / "cup" / "coffee.png").string(), png);
  const DataSpec spec = parse_data_spec("folder:" + dir.path().string(), DataOrigin::train_val);
  const OneFileSource same_file(png, "coffee.png");
  for (const int64_t given : {int64_t{0}, int64_t{48}}) {
    DatasetContext context;
    context.shape = DataShape{3, 32, 1};
    context.training = false;
    context.images.eval_resize = given;
    const std::unique_ptr<Dataset> dataset = make_dataset(spec, context);
    const int resize = given > 0 ? int(given) : 36;
    EXPECT_NE(dataset->describe().find("resize " + std::to_string(resize) + " + center crop 32"), std::string::npos)
        << dataset->describe();
    std::vector<uint8_t> pixels(32 * 32 * 3), want(pixels.size());
    int32_t label = -1;
    dataset->fill_pixels(0, 0, 1, 1, pixels.data(), &label);
    TransformSpec direct;
    direct.crop_flip = false, direct.size = 32, direct.resize = resize;
    Rng rng(0);
    PipelineScratch scratch;
    transform_sample(same_file, 0, direct, rng, scratch, want.data());
    EXPECT_EQ(pixels, want) << given;
  }
  DatasetContext too_small;
  too_small.shape = DataShape{3, 32, 1};
  too_small.training = false;
  too_small.images.eval_resize = 30;
  testing::expect_error([&] { make_dataset(spec, too_small); }, {"eval resize side 30 is below the crop 32"});
}

}  // namespace
}  // namespace ddpx
