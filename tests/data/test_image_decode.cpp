// JPEG and PNG decoding: PIL's pixels from the fixtures (tools/make_transform_fixtures.py --images: same libjpeg,
// so baseline, progressive, gray and CMYK JPEGs decode to exactly PIL's values; PNGs are lossless); a crop decodes
// the same pixels as the full decode's region; DCT-scaled decodes stay near the full decode's resampled result;
// bombs, truncated and corrupt files are refused naming the file.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include <cmath>
#include <fstream>

#include "data/image_decode.hpp"
#include "data/image_transform.hpp"
#include "error_expect.hpp"
#include "image_files.hpp"

namespace ddpx {
namespace {

using testing::expect_error;
const std::string kImages = std::string(DDPX_SOURCE_DIR) + "/tests/fixtures/images/";

DecodeRequest whole_image(const std::string& name) {
  DecodeRequest request;
  request.choose_box = [](int h, int w) { return CropBox{0, 0, double(h), double(w)}; };
  request.box_bounds_sampling = true;
  request.dct_scaling = false;
  request.max_pixels = 1 << 30;
  request.name = [name] { return name; };
  return request;
}

DecodedRegion decode_file(const std::vector<uint8_t>& bytes, const DecodeRequest& request, std::vector<uint8_t>& buffer) {
  return bytes[0] == 0xFF ? decode_jpeg(bytes.data(), bytes.size(), request, buffer)
                          : decode_png(bytes.data(), bytes.size(), request, buffer);
}

TEST(ImageDecode, FixturesDecodeToPilsPixels) {
  std::ifstream in(kImages + "decoded.json");
  const nlohmann::json decoded = nlohmann::json::parse(in);
  int checked = 0;
  for (const auto& [name, want] : decoded.items()) {
    const std::vector<uint8_t> bytes = testing::read_file(kImages + name);
    std::vector<uint8_t> buffer;
    const DecodedRegion region = decode_file(bytes, whole_image(name), buffer);
    ASSERT_EQ(region.view.height, want["height"].get<int>()) << name;
    ASSERT_EQ(region.view.width, want["width"].get<int>()) << name;
    ASSERT_EQ(region.view.channels, want["channels"].get<int>()) << name;
    const std::vector<int> pixels = want["pixels"].get<std::vector<int>>();
    int differ = 0;
    for (int y = 0; y < region.view.height; ++y)
      for (int x = 0; x < region.view.width * region.view.channels; ++x)
        differ += region.view.pixels[y * region.view.stride + x] != pixels[size_t(y * region.view.width * region.view.channels + x)];
    EXPECT_EQ(differ, 0) << name;
    ++checked;
  }
  EXPECT_EQ(checked, 9);
}

TEST(ImageDecode, ACropDecodesTheFullDecodesRegion) {
  const testing::Pixels photo = testing::skimage_photograph("chelsea.png");
  if (photo.data.empty()) GTEST_SKIP() << "python3-skimage's photographs are missing (scripts/install-deps.sh --tests)";
  for (testing::JpegKind kind : {testing::JpegKind::baseline, testing::JpegKind::progressive, testing::JpegKind::gray,
                                 testing::JpegKind::cmyk}) {
    const std::vector<uint8_t> jpeg = testing::encode_jpeg(photo, 90, kind);
    std::vector<uint8_t> full_buffer, crop_buffer;
    const DecodedRegion full = decode_jpeg(jpeg.data(), jpeg.size(), whole_image("full"), full_buffer);
    DecodeRequest request = whole_image("crop");
    const CropBox box{37, 53, 150, 201};  // not on iMCU boundaries
    request.choose_box = [&](int, int) { return box; };
    const DecodedRegion crop = decode_jpeg(jpeg.data(), jpeg.size(), request, crop_buffer);
    ASSERT_EQ(crop.view.height, 150);
    ASSERT_EQ(crop.view.width, 201);
    EXPECT_EQ(crop.box.top, 0);
    EXPECT_EQ(crop.box.left, 0);
    int worst = 0;
    for (int y = 0; y < 150; ++y)
      for (int x = 0; x < 201 * crop.view.channels; ++x)
        worst = std::max(worst, std::abs(int(crop.view.pixels[y * crop.view.stride + x]) -
                                         int(full.view.pixels[(y + 37) * full.view.stride + 53 * full.view.channels + x])));
    // The decoder's margin around the crop gives chroma upsampling its neighbours: the same pixels.
    EXPECT_EQ(worst, 0) << static_cast<int>(kind);
  }
}

TEST(ImageDecode, DctScalingStaysCloseToTheFullDecode) {
  const testing::Pixels photo = testing::skimage_photograph("coffee.png");  // 600 x 400
  if (photo.data.empty()) GTEST_SKIP() << "python3-skimage's photographs are missing";
  const std::vector<uint8_t> jpeg = testing::encode_jpeg(photo, 90, testing::JpegKind::baseline);
  for (int out : {32, 64, 72}) {  // 1/4, 1/2, 1/2 of a 380 x 520 crop (the scaled crop stays 2.5x the output)
    const CropBox box{10, 40, 380, 520};
    std::vector<uint8_t> buffers[2], results[2];
    for (int scaled = 0; scaled < 2; ++scaled) {
      DecodeRequest request = whole_image("coffee");
      request.choose_box = [&](int, int) { return box; };
      request.dct_scaling = scaled == 1;
      request.out_size = out;
      const DecodedRegion region = decode_jpeg(jpeg.data(), jpeg.size(), request, buffers[scaled]);
      if (scaled) EXPECT_LT(region.view.height, 380) << "expected a DCT-scaled decode at out " << out;
      results[scaled].resize(size_t(out * out * 3));
      resample(region.view, region.box, out, out, false, results[scaled].data());
    }
    double total = 0;
    int worst = 0;
    for (size_t i = 0; i < results[0].size(); ++i) {
      const int d = std::abs(int(results[0][i]) - int(results[1][i]));
      total += d;
      worst = std::max(worst, d);
    }
    // Stated tolerance: mean |difference| under 1.5 levels, none above 40 (edges of a photograph).
    EXPECT_LT(total / double(results[0].size()), 1.5) << out;
    EXPECT_LE(worst, 40) << out;
  }
}

std::vector<uint8_t> bomb_png(uint32_t width, uint32_t height) {
  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 'I', 'H', 'D', 'R'};
  for (uint32_t v : {width, height})
    for (int s = 24; s >= 0; s -= 8) png.push_back(uint8_t(v >> s));
  for (uint8_t b : {8, 2, 0, 0, 0}) png.push_back(b);  // 8-bit RGB
  const uLong crc = crc32(0, png.data() + 12, 17);
  for (int s = 24; s >= 0; s -= 8) png.push_back(uint8_t(crc >> s));
  return png;  // no image data follows: only the header is ever read
}

TEST(ImageDecode, DecompressionBombsAreRefusedFromTheirHeader) {
  std::vector<uint8_t> buffer;
  const std::vector<uint8_t> png = bomb_png(100000, 100000);
  DecodeRequest request = whole_image("bomb.png");
  request.max_pixels = 178956970;
  expect_error([&] { decode_png(png.data(), png.size(), request, buffer); },
               {"bomb.png", "100000 x 100000 = 10000000000 pixels", "above the limit of 178956970", "--max-pixels"});
  EXPECT_LT(buffer.capacity(), size_t{1} << 20);  // nothing of the claimed size was allocated
  // A JPEG whose SOF claims 65000 x 65000.
  std::vector<uint8_t> jpeg = testing::read_file(kImages + "baseline_420.jpg");
  for (size_t i = 0; i + 8 < jpeg.size(); ++i)
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC0) {
      jpeg[i + 5] = 0xFD, jpeg[i + 6] = 0xE8, jpeg[i + 7] = 0xFD, jpeg[i + 8] = 0xE8;
      break;
    }
  request.name = [] { return std::string("bomb.jpg"); };
  expect_error([&] { decode_jpeg(jpeg.data(), jpeg.size(), request, buffer); },
               {"bomb.jpg", "65000 x 65000", "above the limit"});
}

TEST(ImageDecode, TruncatedAndCorruptFilesAreRefusedNamingThem) {
  std::vector<uint8_t> buffer;
  for (const char* name : {"baseline_420.jpg", "progressive.jpg", "rgb.png"}) {
    std::vector<uint8_t> bytes = testing::read_file(kImages + name);
    bytes.resize(bytes.size() * 2 / 3);
    expect_error([&] { decode_file(bytes, whole_image(name), buffer); }, {name, "replace or remove the file"});
  }
  std::vector<uint8_t> garbage = testing::read_file(kImages + "baseline_420.jpg");
  for (size_t i = 2; i < 200 && i < garbage.size(); ++i) garbage[i] = uint8_t(i * 7);
  expect_error([&] { decode_jpeg(garbage.data(), garbage.size(), whole_image("garbage.jpg"), buffer); },
               {"garbage.jpg", "not a readable JPEG"});
}

}  // namespace
}  // namespace ddpx
