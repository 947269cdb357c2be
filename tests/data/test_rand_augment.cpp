// RandAugment against torchvision (tests/fixtures/rand_augment_torchvision.json, from
// tools/make_rand_augment_fixtures.py): every op at bins 0/3, 9 and 30 with both signs on two photographs, a random
// image and a gray one, each output equal to torchvision's byte for byte (no tolerance); the magnitude tables equal
// torch's float32 values for every size dumped. The draws: deterministic per seed, every op and sign drawn with
// their odds, the same batches whatever the loader's worker count, never on --val. Bad --randaugment values are
// refused naming the flag.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "data/auto_augment.hpp"
#include "data/batch_loader.hpp"
#include "data/data_spec.hpp"
#include "data/dataset.hpp"
#include "error_expect.hpp"
#include "fixture_images.hpp"

namespace ddpx {
namespace {

using testing::base64;
using testing::expect_error;
using testing::loaded_pixels;
using testing::op_named;

nlohmann::json fixtures() { return testing::read_fixture("rand_augment_torchvision.json"); }

TEST(RandAugment, MagnitudeTablesAreTorchvisionsFloat32Values) {
  const nlohmann::json all = fixtures();
  int compared = 0;
  for (const nlohmann::json& table : all["tables"]) {
    const int height = table["height"], width = table["width"];
    for (const auto& [name, values] : table["magnitudes"].items()) {
      const AugmentOp op = op_named(name);
      for (size_t bin = 0; bin < values.size(); ++bin) {
        // 0-dim entries (Identity, AutoContrast, Equalize) hold one value, used for every bin.
        EXPECT_EQ(augment_op_magnitude(op, static_cast<int>(bin), 31, height, width), values[bin].get<double>())
            << name << " bin " << bin << " at " << height << "x" << width;
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 3000);
}

TEST(RandAugment, EveryOpEqualsTorchvisionByteForByte) {
  const nlohmann::json all = fixtures();
  std::vector<std::vector<uint8_t>> images;
  std::vector<std::array<int, 3>> shapes;
  for (const nlohmann::json& image : all["images"]) {
    images.push_back(image["pixels"].get<std::vector<uint8_t>>());
    shapes.push_back({image["shape"][0].get<int>(), image["shape"][1].get<int>(), image["shape"][2].get<int>()});
  }
  std::map<std::string, int> per_op;
  std::vector<uint8_t> scratch;
  int changed = 0;
  for (const nlohmann::json& c : all["cases"]) {
    const size_t index = c["image"];
    const auto [height, width, channels] = shapes[index];
    const std::string name = c["op"];
    const AugmentOp op = op_named(name);
    const double magnitude = c["magnitude"];
    // The magnitude RandAugment passes: the table's bin, negated for the negative sign.
    EXPECT_EQ(magnitude, c["sign"].get<int>() * augment_op_magnitude(op, c["bin"], 31, height, width)) << name;
    std::vector<uint8_t> pixels = images[index];
    apply_augment_op(op, magnitude, pixels.data(), height, width, channels, scratch);
    const std::vector<uint8_t> want = base64(c["output"].get<std::string>());
    ASSERT_EQ(pixels.size(), want.size()) << name;
    int differing = 0;
    for (size_t i = 0; i < want.size(); ++i) differing += pixels[i] != want[i];
    EXPECT_EQ(differing, 0) << name << " bin " << c["bin"] << " sign " << c["sign"] << " on image " << index
                            << " (" << height << "x" << width << "x" << channels << ")";
    changed += pixels != images[index];
    ++per_op[name];
  }
  EXPECT_EQ(per_op.size(), static_cast<size_t>(kRandAugmentOps));
  for (const auto& [name, count] : per_op) EXPECT_GE(count, 4) << name;
  EXPECT_GT(changed, 150);  // the ops do change the images (bin 0, Identity, Color on gray do not): not vacuous
}

TEST(RandAugment, DrawsAreDeterministicPerSeedWithTorchvisionsOdds) {
  const AutoAugmentSpec spec = parse_rand_augment("2,9");
  std::array<int, kRandAugmentOps> ops{};
  int negative = 0, signed_draws = 0;
  constexpr int kImages = 7000;
  for (int i = 0; i < kImages; ++i) {
    Rng a(1000 + i), b(1000 + i);
    const std::vector<AugmentDraw> first = draw_auto_augment(spec, 224, 224, a);
    const std::vector<AugmentDraw> again = draw_auto_augment(spec, 224, 224, b);
    ASSERT_EQ(first.size(), 2u);
    for (size_t k = 0; k < first.size(); ++k) {
      EXPECT_EQ(first[k].op, again[k].op);
      EXPECT_EQ(first[k].magnitude, again[k].magnitude);
      ++ops[static_cast<size_t>(first[k].op)];
      const double unsigned_magnitude = augment_op_magnitude(first[k].op, 9, 31, 224, 224);
      EXPECT_EQ(std::fabs(first[k].magnitude), std::fabs(unsigned_magnitude));
      if (augment_op_signed(first[k].op) && unsigned_magnitude != 0) {
        ++signed_draws;
        negative += first[k].magnitude < 0;
      } else {
        EXPECT_GE(first[k].magnitude, 0) << augment_op_name(first[k].op) << " is not signed";
      }
    }
  }
  // 14,000 draws: each op 1,000 expected (sd ~31), half of the signed ones negative.
  for (int k = 0; k < kRandAugmentOps; ++k) EXPECT_NEAR(ops[static_cast<size_t>(k)], 1000, 150) << k;
  EXPECT_NEAR(double(negative) / signed_draws, 0.5, 0.03);
  // torchvision's table at the default magnitude 9 on a 224 x 224 image.
  EXPECT_FLOAT_EQ(augment_op_magnitude(AugmentOp::rotate, 9, 31, 224, 224), 9.0);
  EXPECT_FLOAT_EQ(augment_op_magnitude(AugmentOp::shear_x, 9, 31, 224, 224), 0.09);
  EXPECT_EQ(augment_op_magnitude(AugmentOp::posterize, 9, 31, 224, 224), 7.0);
  EXPECT_FLOAT_EQ(augment_op_magnitude(AugmentOp::translate_x, 9, 31, 224, 224), 150.0 / 331.0 * 224 * 9 / 30);
}

const char* const kFashion = "/usr/share/datasets/fashion-mnist";

TEST(RandAugment, LoaderBatchesDoNotDependOnWorkersAndValIsNotAugmented) {
  DatasetContext context;
  context.shape = DataShape{1, 28, 10};
  context.seed = 5;
  const DataSpec train = parse_data_spec(std::string("idx:") + kFashion + ":train", DataOrigin::train_data);
  const std::unique_ptr<Dataset> plain = make_dataset(train, context);
  context.images.auto_augment = parse_rand_augment("2,9");
  const std::unique_ptr<Dataset> augmented = make_dataset(train, context);
  EXPECT_NE(augmented->describe().find("RandAugment(num_ops=2, magnitude=9)"), std::string::npos)
      << augmented->describe();
  const std::vector<uint8_t> one = loaded_pixels(*augmented, 1, 6, 16);
  EXPECT_EQ(one, loaded_pixels(*augmented, 3, 6, 16));
  const std::vector<uint8_t> without = loaded_pixels(*plain, 2, 6, 16);
  ASSERT_EQ(one.size(), without.size());
  // Each image is changed unless both ops were the identity on it (or ops that leave it be, e.g. Color on gray).
  int changed = 0;
  const size_t image = 28 * 28;
  for (size_t i = 0; i < one.size() / image; ++i)
    changed += !std::equal(one.begin() + i * image, one.begin() + (i + 1) * image, without.begin() + i * image);
  EXPECT_GT(changed, 96 * 3 / 4);
  // --val: in order, the eval transform, and no RandAugment whatever the settings say.
  context.training = false;
  const DataSpec test = parse_data_spec(std::string("idx:") + kFashion + ":test", DataOrigin::train_val);
  const std::unique_ptr<Dataset> val = make_dataset(test, context);
  EXPECT_EQ(val->describe().find("RandAugment"), std::string::npos) << val->describe();
  context.images.auto_augment = AutoAugmentSpec{};
  EXPECT_EQ(loaded_pixels(*val, 1, 2, 16), loaded_pixels(*make_dataset(test, context), 2, 2, 16));
}

TEST(RandAugment, BadValuesAreRefusedNamingTheFlag) {
  EXPECT_EQ(parse_rand_augment("2,9").num_ops, 2);
  EXPECT_EQ(parse_rand_augment("1,0").magnitude, 0);
  EXPECT_EQ(parse_rand_augment("16,30").magnitude, 30);
  for (const char* text : {"", "2", "2,", ",9", "a,9", "2,b", "2,9,31", "2.5,9", " 2,9", "2;9"})
    expect_error([&] { parse_rand_augment(text); }, {"--randaugment", "give N,M"});
  expect_error([&] { parse_rand_augment("0,9"); }, {"--randaugment '0,9'", "1 to 16", "leave the flag out"});
  expect_error([&] { parse_rand_augment("17,9"); }, {"--randaugment '17,9'", "1 to 16"});
  expect_error([&] { parse_rand_augment("2,31"); }, {"--randaugment '2,31'", "0 to 30"});
  expect_error([&] { parse_rand_augment("2,-1"); }, {"--randaugment '2,-1'", "0 to 30"});
}

}  // namespace
}  // namespace ddpx
