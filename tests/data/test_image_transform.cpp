// The transforms against torchvision's on fixed crop parameters (tests/fixtures/transforms_torchvision.json, from
// tools/make_transform_fixtures.py): antialiased bilinear within 1 level of torchvision's (float rounding at .5
// boundaries, torch computes its weights in float32), at least 95% of pixels equal; PIL's luma exactly. The crop
// parameters follow RandomResizedCrop's rules.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "data/image_transform.hpp"

namespace ddpx {
namespace {

nlohmann::json fixtures() {
  std::ifstream in(std::string(DDPX_SOURCE_DIR) + "/tests/fixtures/transforms_torchvision.json");
  return nlohmann::json::parse(in);
}

void expect_close(const std::vector<uint8_t>& got, const std::vector<int>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t equal = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_LE(std::abs(int(got[i]) - want[i]), 1) << what << " at " << i;
    equal += int(got[i]) == want[i];
  }
  EXPECT_GE(double(equal) / double(got.size()), 0.95) << what;
}

TEST(ImageTransform, MatchesTorchvisionOnFixedParameters) {
  const nlohmann::json all = fixtures();
  int checked = 0;
  for (const nlohmann::json& c : all["cases"]) {
    const std::vector<uint8_t> input = c["input"].get<std::vector<uint8_t>>();
    const std::vector<int> want = c["output"].get<std::vector<int>>();
    const int height = c["shape"][0], width = c["shape"][1], channels = c["shape"][2];
    const ImageView view{input.data(), height, width, channels, int64_t{width} * channels};
    if (c["kind"] == "resized_crop") {
      // RandomResizedCrop crops first: the box's own pixels are the whole source.
      const int top = c["top"], left = c["left"], h = c["height"], w = c["width"], size = c["size"];
      const ImageView crop{input.data() + (int64_t{top} * width + left) * channels, h, w, channels, view.stride};
      std::vector<uint8_t> out(size_t(size) * size * channels);
      resample(crop, CropBox{0, 0, double(h), double(w)}, size, size, false, out.data());
      expect_close(out, want, c.dump().substr(0, 80));
      // The flip mirrors the output's columns.
      std::vector<uint8_t> flipped(out.size());
      resample(crop, CropBox{0, 0, double(h), double(w)}, size, size, true, flipped.data());
      for (int y = 0; y < size; ++y)
        for (int x = 0; x < size; ++x)
          for (int ch = 0; ch < channels; ++ch)
            EXPECT_EQ(flipped[(size_t(y) * size + x) * channels + ch],
                      out[(size_t(y) * size + (size - 1 - x)) * channels + ch]);
    } else if (c["kind"] == "resize_center_crop") {
      const int resize = c["resize"], size = c["size"];
      std::vector<uint8_t> out(size_t(size) * size * channels);
      resample(view, center_crop_box(height, width, resize, size), size, size, false, out.data());
      expect_close(out, want, c.dump().substr(0, 80));
    } else {
      std::vector<uint8_t> out(size_t(height) * width);
      convert_channels(input.data(), height * width, 3, 1, out.data());
      for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(int(out[i]), want[i]) << "luma at " << i;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 9);
}

TEST(ImageTransform, SameSizeResizeIsTheIdentityAndGrayRepeatsIntoRgb) {
  std::vector<uint8_t> image(28 * 28);
  for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<uint8_t>((i * 37) % 251);
  std::vector<uint8_t> out(image.size());
  resample(ImageView{image.data(), 28, 28, 1, 28}, center_crop_box(28, 28, 28, 28), 28, 28, false, out.data());
  EXPECT_EQ(out, image);
  std::vector<uint8_t> rgb(3 * 4);
  convert_channels(image.data(), 4, 1, 3, rgb.data());
  for (int p = 0; p < 4; ++p)
    for (int ch = 0; ch < 3; ++ch) EXPECT_EQ(rgb[size_t(p) * 3 + ch], image[size_t(p)]);
}

TEST(ImageTransform, RandomResizedCropFollowsTorchvisionsRules) {
  Rng rng(3);
  int fallback_like = 0;
  for (int i = 0; i < 2000; ++i) {
    const int height = 50 + i % 300, width = 60 + (i * 7) % 400;
    const CropBox box = random_resized_crop_box(height, width, rng);
    ASSERT_TRUE(box.top >= 0 && box.left >= 0 && box.height >= 1 && box.width >= 1);
    ASSERT_LE(box.top + box.height, height);
    ASSERT_LE(box.left + box.width, width);
    EXPECT_EQ(box.top, std::floor(box.top));  // integer boxes
    const double area = box.height * box.width / (double(height) * width);
    const double ratio = box.width / box.height;
    if (area > 1.0001 || area < 0.07) ++fallback_like;  // rounding lets the area stray slightly
    EXPECT_LE(area, 1.0 + 1e-9);
    if (box.height > 20 && box.width > 20) EXPECT_TRUE(ratio > 0.7 && ratio < 1.43) << ratio;
  }
  EXPECT_EQ(fallback_like, 0);
  // An extreme aspect ratio never fits 10 tries: the fallback clamps the ratio to 4/3, centered.
  Rng other(1);
  const CropBox wide = random_resized_crop_box(10, 1000, other);
  EXPECT_EQ(wide.height, 10);
  EXPECT_EQ(wide.width, 13);  // round(10 * 4/3)
  EXPECT_EQ(wide.left, (1000 - 13) / 2);
}

}  // namespace
}  // namespace ddpx
