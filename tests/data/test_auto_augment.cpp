// TrivialAugmentWide and AutoAugment against torchvision (tests/fixtures/auto_augment_torchvision.json, from
// tools/make_auto_augment_fixtures.py): every op at TrivialAugmentWide's wide magnitudes and at every (op, bin)
// AutoAugment's three policies use, Invert included, equal to torchvision's output byte for byte (no tolerance, as
// RandAugment's test: the same ops); the magnitude tables equal torch's float32 values; the policies' tables equal
// torchvision's. The draws: deterministic per seed; TrivialAugmentWide's op and bin uniform, its sign odds 1/2;
// AutoAugment's outcomes (which ops of which sub-policy applied, at which magnitude) in the proportions its table
// gives. In the loader: the same batches whatever the worker count, never on --val. Two policies at once, bad
// policy names are refused naming the flags.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
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

const nlohmann::json& fixtures() {
  static const nlohmann::json all = testing::read_fixture("auto_augment_torchvision.json");
  return all;
}

TEST(AutoAugment, MagnitudeTablesAreTorchvisionsFloat32Values) {
  int compared = 0;
  // TrivialAugmentWide's table holds no image size: any size gives it.
  for (const auto& [name, values] : fixtures()["tables"]["wide"].items())
    for (size_t bin = 0; bin < values.size(); ++bin)
      for (const auto& [height, width] : {std::pair{224, 224}, {19, 23}}) {
        EXPECT_EQ(augment_op_magnitude(op_named(name), static_cast<int>(bin), 31, height, width, AugmentRanges::wide),
                  values[bin].get<double>())
            << name << " bin " << bin;
        ++compared;
      }
  for (const nlohmann::json& table : fixtures()["tables"]["autoaugment"]) {
    const int height = table["height"], width = table["width"];
    for (const auto& [name, values] : table["magnitudes"].items())
      for (size_t bin = 0; bin < values.size(); ++bin) {
        EXPECT_EQ(augment_op_magnitude(op_named(name), static_cast<int>(bin), 10, height, width),
                  values[bin].get<double>())
            << name << " bin " << bin << " at " << height << "x" << width;
        ++compared;
      }
  }
  EXPECT_GT(compared, 1000);
  // TrivialAugmentWide's ends: shear 0.99, translate 32 pixels, rotate 135 degrees, posterize to 2 bits.
  EXPECT_FLOAT_EQ(augment_op_magnitude(AugmentOp::rotate, 30, 31, 8, 8, AugmentRanges::wide), 135.0);
  EXPECT_FLOAT_EQ(augment_op_magnitude(AugmentOp::translate_y, 30, 31, 8, 8, AugmentRanges::wide), 32.0);
  EXPECT_EQ(augment_op_magnitude(AugmentOp::posterize, 30, 31, 8, 8, AugmentRanges::wide), 2.0);
}

TEST(AutoAugment, EveryOpAtItsMagnitudesEqualsTorchvisionByteForByte) {
  const std::vector<testing::FixtureImage> images = testing::fixture_images(fixtures());
  std::map<std::string, int> per_table_op;
  std::vector<uint8_t> scratch;
  int changed = 0, cases = 0;
  for (const nlohmann::json& c : fixtures()["cases"]) {
    const testing::FixtureImage& image = images[c["image"].get<size_t>()];
    const std::string name = c["op"], table = c["table"];
    const AugmentOp op = op_named(name);
    const int bin = c["bin"];
    const double magnitude = c["magnitude"];
    // The magnitude the policy passes: its table's bin (None: 0), negated for the negative sign.
    const bool wide = table == "wide";
    const double from_table =
        bin < 0 ? 0.0
                : augment_op_magnitude(op, bin, wide ? 31 : 10, image.height, image.width,
                                       wide ? AugmentRanges::wide : AugmentRanges::standard);
    EXPECT_EQ(magnitude, c["sign"].get<int>() * from_table) << table << " " << name << " bin " << bin;
    std::vector<uint8_t> pixels = image.pixels;
    apply_augment_op(op, magnitude, pixels.data(), image.height, image.width, image.channels, scratch);
    const std::vector<uint8_t> want = base64(c["output"].get<std::string>());
    ASSERT_EQ(pixels.size(), want.size()) << name;
    int differing = 0;
    for (size_t i = 0; i < want.size(); ++i) differing += pixels[i] != want[i];
    EXPECT_EQ(differing, 0) << table << " " << name << " bin " << bin << " sign " << c["sign"] << " on "
                            << image.height << "x" << image.width << "x" << image.channels;
    changed += pixels != image.pixels;
    ++per_table_op[table + " " + name];
    ++cases;
  }
  EXPECT_GT(cases, 600);
  // TrivialAugmentWide: the 14 ops; AutoAugment: the 14 its policies use (all but Identity) and Invert.
  int wide = 0, policy = 0;
  for (const auto& [key, count] : per_table_op) (key.rfind("wide", 0) == 0 ? wide : policy) += 1;
  EXPECT_EQ(wide, kRandAugmentOps);
  EXPECT_EQ(policy, kAugmentOps - 1);
  EXPECT_EQ(per_table_op["autoaugment Invert"], 4);  // on each image
  EXPECT_GT(changed, cases / 2);  // not vacuous
}

TEST(AutoAugment, PoliciesAreTorchvisions) {
  for (const auto& [name, subs] : fixtures()["policies"].items()) {
    const AutoAugmentPolicy policy = parse_auto_augment_policy(name).policy;
    EXPECT_EQ(auto_augment_policy_name(policy), name);
    ASSERT_EQ(subs.size(), static_cast<size_t>(kSubPolicies)) << name;
    for (int s = 0; s < kSubPolicies; ++s) {
      const SubPolicyOp* ours = auto_augment_sub_policy(policy, s);
      for (int k = 0; k < 2; ++k) {
        const nlohmann::json& theirs = subs[static_cast<size_t>(s)][static_cast<size_t>(k)];
        EXPECT_EQ(augment_op_name(ours[k].op), theirs[0].get<std::string>()) << name << " " << s << " " << k;
        EXPECT_EQ(ours[k].probability, theirs[1].get<double>()) << name << " " << s << " " << k;
        EXPECT_EQ(ours[k].bin, theirs[2].is_null() ? -1 : theirs[2].get<int>()) << name << " " << s << " " << k;
      }
    }
  }
}

TEST(AutoAugment, TrivialAugmentWideDrawsOneOpWithAUniformBinAndSign) {
  const AutoAugmentSpec spec = trivial_augment_wide();
  EXPECT_EQ(spec.describe(), "TrivialAugmentWide(num_magnitude_bins=31)");
  std::array<int, kRandAugmentOps> ops{};
  std::array<int, 31> bins{};
  int negative = 0, signed_draws = 0, with_bins = 0;
  constexpr int kImages = 42000;
  for (int i = 0; i < kImages; ++i) {
    Rng a(7 + i), b(7 + i);
    const std::vector<AugmentDraw> first = draw_auto_augment(spec, 224, 224, a);
    const std::vector<AugmentDraw> again = draw_auto_augment(spec, 224, 224, b);
    ASSERT_EQ(first.size(), 1u);
    EXPECT_EQ(first[0].op, again[0].op);
    EXPECT_EQ(first[0].magnitude, again[0].magnitude);
    const AugmentOp op = first[0].op;
    ++ops[static_cast<size_t>(op)];
    if (!augment_op_has_magnitudes(op)) {
      EXPECT_EQ(first[0].magnitude, 0.0) << augment_op_name(op);
      continue;
    }
    // Which bin: the one whose wide-table entry the magnitude is (posterize and the bin-0 entries repeat; count the
    // linspace ops only, whose 31 entries differ).
    if (op == AugmentOp::rotate || op == AugmentOp::shear_x || op == AugmentOp::brightness) {
      int found = -1;
      for (int bin = 0; bin < 31; ++bin)
        if (std::fabs(first[0].magnitude) == augment_op_magnitude(op, bin, 31, 224, 224, AugmentRanges::wide)) found = bin;
      ASSERT_GE(found, 0) << first[0].magnitude;
      ++bins[static_cast<size_t>(found)];
      ++with_bins;
    }
    if (augment_op_signed(op) && first[0].magnitude != 0) {
      ++signed_draws;
      negative += first[0].magnitude < 0;
    } else {
      EXPECT_GE(first[0].magnitude, 0) << augment_op_name(op);
    }
  }
  // 42,000 draws: each op 3,000 expected (sd ~53); each of the 31 bins ~9,000 / 31 = 290 (sd ~17).
  for (int k = 0; k < kRandAugmentOps; ++k) EXPECT_NEAR(ops[static_cast<size_t>(k)], 3000, 300) << k;
  for (int bin = 0; bin < 31; ++bin) EXPECT_NEAR(bins[static_cast<size_t>(bin)], with_bins / 31.0, 90) << bin;
  EXPECT_NEAR(double(negative) / signed_draws, 0.5, 0.02);
}

// Key of one applied op: (op, |magnitude|).
using Applied = std::vector<std::pair<AugmentOp, double>>;

TEST(AutoAugment, AutoAugmentOutcomesFollowThePolicyTable) {
  for (const char* name : {"imagenet", "cifar10", "svhn"}) {
    SCOPED_TRACE(name);
    const AutoAugmentSpec spec = parse_auto_augment_policy(name);
    EXPECT_EQ(spec.describe(), std::string("AutoAugment(policy=") + name + ")");
    constexpr int height = 40, width = 36;
    // The exact odds of each outcome: a sub-policy (1/25), each op applied with its probability.
    std::map<Applied, double> expected;
    for (int s = 0; s < kSubPolicies; ++s) {
      const SubPolicyOp* sub = auto_augment_sub_policy(spec.policy, s);
      for (int mask = 0; mask < 4; ++mask) {
        Applied outcome;
        double odds = 1.0 / kSubPolicies;
        for (int k = 0; k < 2; ++k) {
          const bool applied = (mask >> k) & 1;
          odds *= applied ? sub[k].probability : 1 - sub[k].probability;
          if (applied)
            outcome.push_back({sub[k].op, sub[k].bin < 0 ? 0.0
                                                         : augment_op_magnitude(sub[k].op, sub[k].bin, 10, height, width)});
        }
        expected[outcome] += odds;
      }
    }
    std::map<Applied, int> seen;
    int negative = 0, signed_draws = 0;
    constexpr int kImages = 40000;
    for (int i = 0; i < kImages; ++i) {
      Rng rng(31 * i + 5), again(31 * i + 5);
      const std::vector<AugmentDraw> draws = draw_auto_augment(spec, height, width, rng);
      const std::vector<AugmentDraw> same = draw_auto_augment(spec, height, width, again);
      ASSERT_EQ(draws.size(), same.size());
      Applied outcome;
      for (size_t k = 0; k < draws.size(); ++k) {
        EXPECT_EQ(draws[k].magnitude, same[k].magnitude);
        outcome.push_back({draws[k].op, std::fabs(draws[k].magnitude)});
        if (augment_op_signed(draws[k].op) && draws[k].magnitude != 0) {
          ++signed_draws;
          negative += draws[k].magnitude < 0;
        }
      }
      ++seen[outcome];
    }
    for (const auto& [outcome, count] : seen)
      EXPECT_TRUE(expected.count(outcome)) << "an outcome the table cannot give, " << outcome.size() << " ops";
    for (const auto& [outcome, odds] : expected) {
      const double mean = odds * kImages, sd = std::sqrt(kImages * odds * (1 - odds));
      EXPECT_NEAR(seen[outcome], mean, 5 * sd + 1) << outcome.size() << " ops, odds " << odds;
    }
    EXPECT_NEAR(double(negative) / signed_draws, 0.5, 0.03);
  }
}

TEST(AutoAugment, OnePolicyPerRunAndBadNamesAreRefusedNamingTheFlags) {
  EXPECT_FALSE(choose_auto_augment("", false, "").enabled());
  EXPECT_EQ(choose_auto_augment("2,9", false, "").describe(), "RandAugment(num_ops=2, magnitude=9)");
  EXPECT_EQ(choose_auto_augment("", true, "").kind, AutoAugmentKind::trivial_augment_wide);
  EXPECT_EQ(choose_auto_augment("", false, "svhn").policy, AutoAugmentPolicy::svhn);
  EXPECT_EQ(choose_auto_augment("", false, "imagenet").flag(), "--auto-augment-policy imagenet");
  expect_error([] { choose_auto_augment("2,9", true, ""); },
               {"--randaugment 2,9 and --trivial-augment", "one automatic augmentation"});
  expect_error([] { choose_auto_augment("", true, "imagenet"); },
               {"--trivial-augment and --auto-augment-policy imagenet", "drop the others"});
  expect_error([] { choose_auto_augment("2,9", false, "cifar10"); },
               {"--randaugment 2,9 and --auto-augment-policy cifar10"});
  for (const char* text : {"", "ImageNet", "ta_wide", "ra", "imagenet ", "augmix"})
    expect_error([&] { parse_auto_augment_policy(text); },
                 {"--auto-augment-policy", "choose imagenet, cifar10 or svhn"});
}

const char* const kFashion = "/usr/share/datasets/fashion-mnist";

TEST(AutoAugment, LoaderBatchesDoNotDependOnWorkersAndValIsNotAugmented) {
  DatasetContext context;
  context.shape = DataShape{1, 28, 10};
  context.seed = 5;
  const DataSpec train = parse_data_spec(std::string("idx:") + kFashion + ":train", DataOrigin::train_data);
  const std::vector<uint8_t> plain = loaded_pixels(*make_dataset(train, context), 2, 6, 16);
  for (const AutoAugmentSpec& spec : {trivial_augment_wide(), parse_auto_augment_policy("imagenet")}) {
    SCOPED_TRACE(spec.describe());
    context.training = true;
    context.images.auto_augment = spec;
    const std::unique_ptr<Dataset> augmented = make_dataset(train, context);
    EXPECT_NE(augmented->describe().find(" + " + spec.describe()), std::string::npos) << augmented->describe();
    const std::vector<uint8_t> one = loaded_pixels(*augmented, 1, 6, 16);
    EXPECT_EQ(one, loaded_pixels(*augmented, 3, 6, 16));
    ASSERT_EQ(one.size(), plain.size());
    int changed = 0;
    const size_t image = 28 * 28;
    for (size_t i = 0; i < one.size() / image; ++i)
      changed += !std::equal(one.begin() + i * image, one.begin() + (i + 1) * image, plain.begin() + i * image);
    // TrivialAugmentWide leaves an image as it is on Identity, bin 0 of most ops, Color on gray (about 1 in 4);
    // ImageNet's policy often applies nothing (both ops missed) or ops that leave a gray image be.
    EXPECT_GT(changed, 96 / 3) << changed;
    EXPECT_LT(changed, 96) << "every image changed: the identity outcomes are missing";
    // --val: the eval transform, no augmentation whatever the settings say.
    context.training = false;
    const DataSpec test = parse_data_spec(std::string("idx:") + kFashion + ":test", DataOrigin::train_val);
    const std::unique_ptr<Dataset> val = make_dataset(test, context);
    EXPECT_EQ(val->describe().find(spec.describe()), std::string::npos) << val->describe();
    DatasetContext bare = context;
    bare.images.auto_augment = AutoAugmentSpec{};
    EXPECT_EQ(loaded_pixels(*val, 1, 2, 16), loaded_pixels(*make_dataset(test, bare), 2, 2, 16));
  }
}

}  // namespace
}  // namespace ddpx
