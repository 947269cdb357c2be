// RandomErasing (--random-erase) against torchvision: erasing_box() given the draws RandomErasing.get_params made
// (tests/fixtures/auto_augment_torchvision.json, tools/make_auto_augment_fixtures.py: 600 calls on ten image sizes,
// misses included) asks for the same draws in the same order with the same bounds and returns the same box. The
// draws: erased with odds P, boxes inside the image with torchvision's area and aspect ranges, positions covering
// every row and column. In the loader: fill_batch zeroes exactly each image's box after Normalize and leaves the
// rest as it was, the same whatever the worker count; --val is never erased. Bad values are refused naming the flag.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "data/batch_loader.hpp"
#include "data/data_spec.hpp"
#include "data/dataset.hpp"
#include "data/image_dataset.hpp"
#include "data/random_erasing.hpp"
#include "error_expect.hpp"
#include "fixture_images.hpp"

namespace ddpx {
namespace {

using testing::expect_error;
using testing::loaded_floats;

TEST(RandomErasing, BoxEqualsGetParamsGivenTheSameDraws) {
  const nlohmann::json all = testing::read_fixture("auto_augment_torchvision.json");
  // torch.log(torch.tensor((0.3, 3.3))) in float32: the log-ratio bounds.
  EXPECT_EQ(std::log(0.3f), all["log_ratio"][0].get<float>());
  EXPECT_EQ(std::log(3.3f), all["log_ratio"][1].get<float>());
  int cases = 0, misses = 0, retried = 0;
  for (const nlohmann::json& c : all["erasing"]) {
    const int height = c["height"], width = c["width"];
    const nlohmann::json& draws = c["draws"];
    size_t next = 0;
    bool in_order = true;
    auto uniform = [&](float lo, float hi) -> float {
      if (next >= draws.size() || !draws[next].contains("uniform")) return in_order = false, 0.f;
      const nlohmann::json& d = draws[next++]["uniform"];
      EXPECT_EQ(lo, static_cast<float>(d[0].get<double>())) << height << "x" << width;
      EXPECT_EQ(hi, static_cast<float>(d[1].get<double>())) << height << "x" << width;
      return static_cast<float>(d[2].get<double>());
    };
    auto below = [&](int64_t n) -> int64_t {
      if (next >= draws.size() || !draws[next].contains("randint")) return in_order = false, 0;
      const nlohmann::json& d = draws[next++]["randint"];
      EXPECT_EQ(n, d[0].get<int64_t>()) << height << "x" << width;
      return d[1].get<int64_t>();
    };
    const ErasingBox box = erasing_box(height, width, uniform, below);
    EXPECT_TRUE(in_order) << "asked for another draw than get_params made, " << height << "x" << width;
    EXPECT_EQ(next, draws.size()) << "a different number of draws, " << height << "x" << width;
    const std::vector<int> want = c["box"].get<std::vector<int>>();
    if (want[2] == height && want[3] == width) {  // ten misses: torchvision erases the image with itself
      EXPECT_TRUE(box.empty());
      ++misses;
    } else {
      EXPECT_EQ((std::vector<int>{box.top, box.left, box.height, box.width}), want) << height << "x" << width;
    }
    retried += draws.size() > 4;
    ++cases;
  }
  EXPECT_EQ(cases, 600);
  EXPECT_GT(misses, 0);    // the ten-miss path is compared
  EXPECT_GT(retried, 50);  // and boxes found after a miss
}

TEST(RandomErasing, DrawsEraseWithOddsPInsideTheImage) {
  const RandomErasingSpec spec = parse_random_erase("0.25");
  EXPECT_EQ(spec.describe(), "RandomErasing(p=0.25)");
  constexpr int kImages = 20000, kHeight = 224, kWidth = 160;
  int erased = 0;
  double area_sum = 0;
  std::vector<int> top_seen(kHeight), left_seen(kWidth);
  for (int i = 0; i < kImages; ++i) {
    Rng rng(i), again(i);
    const ErasingBox box = random_erasing_box(spec, kHeight, kWidth, rng);
    const ErasingBox same = random_erasing_box(spec, kHeight, kWidth, again);
    EXPECT_EQ(box.top, same.top);
    EXPECT_EQ(box.width, same.width);
    if (box.empty()) continue;
    ++erased;
    ASSERT_GE(box.top, 0);
    ASSERT_GE(box.left, 0);
    ASSERT_LT(box.height, kHeight);
    ASSERT_LT(box.width, kWidth);
    ASSERT_LE(box.top + box.height, kHeight);
    ASSERT_LE(box.left + box.width, kWidth);
    const double fraction = double(box.height) * box.width / (kHeight * kWidth);
    // area in [0.02, 0.33) and aspect in [0.3, 3.3) before rounding h and w to whole pixels.
    EXPECT_GT(fraction, 0.015);
    EXPECT_LT(fraction, 0.36);
    const double aspect = double(box.height) / box.width;
    EXPECT_GT(aspect, 0.25);
    EXPECT_LT(aspect, 3.6);
    area_sum += fraction;
    ++top_seen[static_cast<size_t>(box.top)];
    ++left_seen[static_cast<size_t>(box.left)];
  }
  EXPECT_NEAR(erased, 0.25 * kImages, 5 * std::sqrt(kImages * 0.25 * 0.75));
  // Most area draws fit (both sides below the image's), so the mean fraction is near the uniform's 0.175.
  EXPECT_NEAR(area_sum / erased, 0.175, 0.02);
  EXPECT_GT(top_seen[0], 0);
  EXPECT_GT(left_seen[0], 0);
  Rng unused(1);
  EXPECT_TRUE(random_erasing_box(parse_random_erase("0"), kHeight, kWidth, unused).empty());
  int always = 0;
  for (int i = 0; i < 200; ++i) {
    Rng rng(i);
    always += !random_erasing_box(parse_random_erase("1"), kHeight, kWidth, rng).empty();
  }
  EXPECT_EQ(always, 200);  // p = 1: every image (a 224 x 160 image never misses ten times)
}

TEST(RandomErasing, BadValuesAreRefusedNamingTheFlag) {
  EXPECT_EQ(parse_random_erase("0.25").probability, 0.25);
  EXPECT_EQ(parse_random_erase("1").probability, 1.0);
  EXPECT_FALSE(parse_random_erase("0").enabled());
  for (const char* text : {"", "x", "-0.1", "1.5", "nan", "inf", "0.25,0.5", " 0.2", "0.2 "})
    expect_error([&] { parse_random_erase(text); }, {"--random-erase", "0 to 1"});
}

const char* const kFashion = "/usr/share/datasets/fashion-mnist";

TEST(RandomErasing, FillBatchZeroesEachBoxAfterNormalizeAndValIsNotErased) {
  DatasetContext context;
  context.shape = DataShape{1, 28, 10};
  context.seed = 9;
  const DataSpec train = parse_data_spec(std::string("idx:") + kFashion + ":train", DataOrigin::train_data);
  const std::vector<float> plain = loaded_floats(*make_dataset(train, context), 2, 4, 16);
  context.images.random_erasing = parse_random_erase("0.5");
  const std::unique_ptr<Dataset> erasing = make_dataset(train, context);
  EXPECT_NE(erasing->describe().find(" + Normalize + RandomErasing(p=0.5)"), std::string::npos) << erasing->describe();
  const std::vector<float> one = loaded_floats(*erasing, 1, 4, 16);
  EXPECT_EQ(one, loaded_floats(*erasing, 3, 4, 16));
  ASSERT_EQ(one.size(), plain.size());
  const auto& image_dataset = dynamic_cast<const ImageDataset&>(*erasing);
  int erased = 0;
  for (int64_t step = 0; step < 4; ++step) {
    const std::vector<ErasingBox> boxes = image_dataset.erasing_boxes(step, 0, 1, 16);
    for (size_t t = 0; t < boxes.size(); ++t) {
      const ErasingBox& box = boxes[t];
      erased += !box.empty();
      const size_t base = (static_cast<size_t>(step) * 16 + t) * 28 * 28;
      for (int y = 0; y < 28; ++y)
        for (int x = 0; x < 28; ++x) {
          const bool inside = y >= box.top && y < box.top + box.height && x >= box.left && x < box.left + box.width;
          const size_t at = base + static_cast<size_t>(y * 28 + x);
          if (inside && !box.empty())
            ASSERT_EQ(one[at], 0.f) << step << " " << t;
          else
            ASSERT_EQ(one[at], plain[at]) << step << " " << t;
        }
    }
  }
  EXPECT_GT(erased, 64 / 4);
  EXPECT_LT(erased, 64 * 3 / 4);
  // --val: never erased, whatever the settings say.
  context.training = false;
  const DataSpec test = parse_data_spec(std::string("idx:") + kFashion + ":test", DataOrigin::train_val);
  const std::unique_ptr<Dataset> val = make_dataset(test, context);
  EXPECT_EQ(val->describe().find("RandomErasing"), std::string::npos) << val->describe();
  DatasetContext bare = context;
  bare.images.random_erasing = RandomErasingSpec{};
  EXPECT_EQ(loaded_floats(*val, 1, 2, 16), loaded_floats(*make_dataset(test, bare), 1, 2, 16));
}

}  // namespace
}  // namespace ddpx
