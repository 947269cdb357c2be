// torchvision's RandAugment, TrivialAugmentWide and AutoAugment draws; see auto_augment.hpp.
#include "data/auto_augment.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <charconv>

#include "core/error.hpp"
#include "core/internal_assert.hpp"

namespace ddpx {
namespace {

using Op = AugmentOp;
constexpr int kNone = -1;  // a sub-policy op without a magnitude (torchvision's None)

using SubPolicy = std::array<SubPolicyOp, 2>;
using PolicyTable = std::array<SubPolicy, kSubPolicies>;

// torchvision 0.14's AutoAugment._get_policies, as (op, probability, magnitude bin) pairs.
constexpr PolicyTable kImagenet = {{
    {{{Op::posterize, 0.4, 8}, {Op::rotate, 0.6, 9}}},
    {{{Op::solarize, 0.6, 5}, {Op::auto_contrast, 0.6, kNone}}},
    {{{Op::equalize, 0.8, kNone}, {Op::equalize, 0.6, kNone}}},
    {{{Op::posterize, 0.6, 7}, {Op::posterize, 0.6, 6}}},
    {{{Op::equalize, 0.4, kNone}, {Op::solarize, 0.2, 4}}},
    {{{Op::equalize, 0.4, kNone}, {Op::rotate, 0.8, 8}}},
    {{{Op::solarize, 0.6, 3}, {Op::equalize, 0.6, kNone}}},
    {{{Op::posterize, 0.8, 5}, {Op::equalize, 1.0, kNone}}},
    {{{Op::rotate, 0.2, 3}, {Op::solarize, 0.6, 8}}},
    {{{Op::equalize, 0.6, kNone}, {Op::posterize, 0.4, 6}}},
    {{{Op::rotate, 0.8, 8}, {Op::color, 0.4, 0}}},
    {{{Op::rotate, 0.4, 9}, {Op::equalize, 0.6, kNone}}},
    {{{Op::equalize, 0.0, kNone}, {Op::equalize, 0.8, kNone}}},
    {{{Op::invert, 0.6, kNone}, {Op::equalize, 1.0, kNone}}},
    {{{Op::color, 0.6, 4}, {Op::contrast, 1.0, 8}}},
    {{{Op::rotate, 0.8, 8}, {Op::color, 1.0, 2}}},
    {{{Op::color, 0.8, 8}, {Op::solarize, 0.8, 7}}},
    {{{Op::sharpness, 0.4, 7}, {Op::invert, 0.6, kNone}}},
    {{{Op::shear_x, 0.6, 5}, {Op::equalize, 1.0, kNone}}},
    {{{Op::color, 0.4, 0}, {Op::equalize, 0.6, kNone}}},
    {{{Op::equalize, 0.4, kNone}, {Op::solarize, 0.2, 4}}},
    {{{Op::solarize, 0.6, 5}, {Op::auto_contrast, 0.6, kNone}}},
    {{{Op::invert, 0.6, kNone}, {Op::equalize, 1.0, kNone}}},
    {{{Op::color, 0.6, 4}, {Op::contrast, 1.0, 8}}},
    {{{Op::equalize, 0.8, kNone}, {Op::equalize, 0.6, kNone}}},
}};

constexpr PolicyTable kCifar10 = {{
    {{{Op::invert, 0.1, kNone}, {Op::contrast, 0.2, 6}}},
    {{{Op::rotate, 0.7, 2}, {Op::translate_x, 0.3, 9}}},
    {{{Op::sharpness, 0.8, 1}, {Op::sharpness, 0.9, 3}}},
    {{{Op::shear_y, 0.5, 8}, {Op::translate_y, 0.7, 9}}},
    {{{Op::auto_contrast, 0.5, kNone}, {Op::equalize, 0.9, kNone}}},
    {{{Op::shear_y, 0.2, 7}, {Op::posterize, 0.3, 7}}},
    {{{Op::color, 0.4, 3}, {Op::brightness, 0.6, 7}}},
    {{{Op::sharpness, 0.3, 9}, {Op::brightness, 0.7, 9}}},
    {{{Op::equalize, 0.6, kNone}, {Op::equalize, 0.5, kNone}}},
    {{{Op::contrast, 0.6, 7}, {Op::sharpness, 0.6, 5}}},
    {{{Op::color, 0.7, 7}, {Op::translate_x, 0.5, 8}}},
    {{{Op::equalize, 0.3, kNone}, {Op::auto_contrast, 0.4, kNone}}},
    {{{Op::translate_y, 0.4, 3}, {Op::sharpness, 0.2, 6}}},
    {{{Op::brightness, 0.9, 6}, {Op::color, 0.2, 8}}},
    {{{Op::solarize, 0.5, 2}, {Op::invert, 0.0, kNone}}},
    {{{Op::equalize, 0.2, kNone}, {Op::auto_contrast, 0.6, kNone}}},
    {{{Op::equalize, 0.2, kNone}, {Op::equalize, 0.6, kNone}}},
    {{{Op::color, 0.9, 9}, {Op::equalize, 0.6, kNone}}},
    {{{Op::auto_contrast, 0.8, kNone}, {Op::solarize, 0.2, 8}}},
    {{{Op::brightness, 0.1, 3}, {Op::color, 0.7, 0}}},
    {{{Op::solarize, 0.4, 5}, {Op::auto_contrast, 0.9, kNone}}},
    {{{Op::translate_y, 0.9, 9}, {Op::translate_y, 0.7, 9}}},
    {{{Op::auto_contrast, 0.9, kNone}, {Op::solarize, 0.8, 3}}},
    {{{Op::equalize, 0.8, kNone}, {Op::invert, 0.1, kNone}}},
    {{{Op::translate_y, 0.7, 9}, {Op::auto_contrast, 0.9, kNone}}},
}};

constexpr PolicyTable kSvhn = {{
    {{{Op::shear_x, 0.9, 4}, {Op::invert, 0.2, kNone}}},
    {{{Op::shear_y, 0.9, 8}, {Op::invert, 0.7, kNone}}},
    {{{Op::equalize, 0.6, kNone}, {Op::solarize, 0.6, 6}}},
    {{{Op::invert, 0.9, kNone}, {Op::equalize, 0.6, kNone}}},
    {{{Op::equalize, 0.6, kNone}, {Op::rotate, 0.9, 3}}},
    {{{Op::shear_x, 0.9, 4}, {Op::auto_contrast, 0.8, kNone}}},
    {{{Op::shear_y, 0.9, 8}, {Op::invert, 0.4, kNone}}},
    {{{Op::shear_y, 0.9, 5}, {Op::solarize, 0.2, 6}}},
    {{{Op::invert, 0.9, kNone}, {Op::auto_contrast, 0.8, kNone}}},
    {{{Op::equalize, 0.6, kNone}, {Op::rotate, 0.9, 3}}},
    {{{Op::shear_x, 0.9, 4}, {Op::solarize, 0.3, 3}}},
    {{{Op::shear_y, 0.8, 8}, {Op::invert, 0.7, kNone}}},
    {{{Op::equalize, 0.9, kNone}, {Op::translate_y, 0.6, 6}}},
    {{{Op::invert, 0.9, kNone}, {Op::equalize, 0.6, kNone}}},
    {{{Op::contrast, 0.3, 3}, {Op::rotate, 0.8, 4}}},
    {{{Op::invert, 0.8, kNone}, {Op::translate_y, 0.0, 2}}},
    {{{Op::shear_y, 0.7, 6}, {Op::solarize, 0.4, 8}}},
    {{{Op::invert, 0.6, kNone}, {Op::rotate, 0.8, 4}}},
    {{{Op::shear_y, 0.3, 7}, {Op::translate_x, 0.9, 3}}},
    {{{Op::shear_x, 0.1, 6}, {Op::invert, 0.6, kNone}}},
    {{{Op::solarize, 0.7, 2}, {Op::translate_y, 0.6, 7}}},
    {{{Op::shear_y, 0.8, 4}, {Op::invert, 0.8, kNone}}},
    {{{Op::shear_x, 0.7, 9}, {Op::translate_y, 0.8, 3}}},
    {{{Op::shear_y, 0.8, 5}, {Op::auto_contrast, 0.7, kNone}}},
    {{{Op::shear_x, 0.7, 2}, {Op::invert, 0.1, kNone}}},
}};

const PolicyTable& policy_table(AutoAugmentPolicy policy) {
  switch (policy) {
    case AutoAugmentPolicy::imagenet:
      return kImagenet;
    case AutoAugmentPolicy::cifar10:
      return kCifar10;
    case AutoAugmentPolicy::svhn:
      return kSvhn;
  }
  DDPX_INTERNAL_ASSERT(false, "AutoAugment policy {}", static_cast<int>(policy));
  return kImagenet;
}

int parse_int(std::string_view text, bool& ok) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  ok = !text.empty() && error == std::errc() && end == text.data() + text.size();
  return value;
}

// torch.rand(...) in float32 on the CPU: 24 random bits times 2^-24, in [0, 1).
float uniform_float32(Rng& rng) { return static_cast<float>(rng.next_u64() >> 40) * (1.0f / 16777216.0f); }

// The op's magnitude at `bin` of the spec's table, negated when `negative` and the op is signed.
AugmentDraw drawn(const AutoAugmentSpec& spec, AugmentOp op, int bin, bool negative, int height, int width) {
  AugmentDraw draw{op, 0.0};
  if (bin >= 0 && augment_op_has_magnitudes(op))
    draw.magnitude = augment_op_magnitude(op, bin, spec.num_magnitude_bins(), height, width, spec.ranges());
  if (augment_op_signed(op) && negative) draw.magnitude = -draw.magnitude;
  return draw;
}

}  // namespace

std::string AutoAugmentSpec::describe() const {
  switch (kind) {
    case AutoAugmentKind::off:
      return "off";
    case AutoAugmentKind::rand_augment:
      return fmt::format("RandAugment(num_ops={}, magnitude={})", num_ops, magnitude);
    case AutoAugmentKind::trivial_augment_wide:
      return fmt::format("TrivialAugmentWide(num_magnitude_bins={})", num_magnitude_bins());
    case AutoAugmentKind::auto_augment:
      return fmt::format("AutoAugment(policy={})", auto_augment_policy_name(policy));
  }
  return "off";
}

std::string AutoAugmentSpec::flag() const {
  switch (kind) {
    case AutoAugmentKind::off:
      return "";
    case AutoAugmentKind::rand_augment:
      return fmt::format("--randaugment {},{}", num_ops, magnitude);
    case AutoAugmentKind::trivial_augment_wide:
      return "--trivial-augment";
    case AutoAugmentKind::auto_augment:
      return fmt::format("--auto-augment-policy {}", auto_augment_policy_name(policy));
  }
  return "";
}

const char* auto_augment_policy_name(AutoAugmentPolicy policy) {
  switch (policy) {
    case AutoAugmentPolicy::imagenet:
      return "imagenet";
    case AutoAugmentPolicy::cifar10:
      return "cifar10";
    case AutoAugmentPolicy::svhn:
      return "svhn";
  }
  return "?";
}

AutoAugmentSpec parse_rand_augment(std::string_view text) {
  const size_t comma = text.find(',');
  bool ops_ok = false, magnitude_ok = false;
  AutoAugmentSpec spec;
  spec.kind = AutoAugmentKind::rand_augment;
  if (comma != std::string_view::npos) {
    spec.num_ops = parse_int(text.substr(0, comma), ops_ok);
    spec.magnitude = parse_int(text.substr(comma + 1), magnitude_ok);
  }
  DDPX_REQUIRE(ops_ok && magnitude_ok,
               "--randaugment '{}': give N,M (torchvision's RandAugment(num_ops=N, magnitude=M); its ViT recipe's "
               "--auto-augment ra is 2,9)", text);
  DDPX_REQUIRE(spec.num_ops >= 1 && spec.num_ops <= 16,
               "--randaugment '{}': N = {} ops per image must be 1 to 16 (leave the flag out for none)", text,
               spec.num_ops);
  DDPX_REQUIRE(spec.magnitude >= 0 && spec.magnitude < spec.num_magnitude_bins(),
               "--randaugment '{}': the magnitude M = {} must be 0 to {} (an index into {} bins, as torchvision's)",
               text, spec.magnitude, spec.num_magnitude_bins() - 1, spec.num_magnitude_bins());
  return spec;
}

AutoAugmentSpec parse_auto_augment_policy(std::string_view text) {
  AutoAugmentSpec spec;
  spec.kind = AutoAugmentKind::auto_augment;
  for (const AutoAugmentPolicy policy :
       {AutoAugmentPolicy::imagenet, AutoAugmentPolicy::cifar10, AutoAugmentPolicy::svhn}) {
    if (text == auto_augment_policy_name(policy)) {
      spec.policy = policy;
      return spec;
    }
  }
  fail("--auto-augment-policy '{}' is not known; choose imagenet, cifar10 or svhn (torchvision's AutoAugmentPolicy; "
       "for RandAugment use --randaugment N,M, for TrivialAugmentWide --trivial-augment)", text);
}

AutoAugmentSpec trivial_augment_wide() {
  AutoAugmentSpec spec;
  spec.kind = AutoAugmentKind::trivial_augment_wide;
  return spec;
}

AutoAugmentSpec choose_auto_augment(std::string_view randaugment, bool trivial_augment,
                                    std::string_view auto_augment_policy) {
  std::vector<std::string> given;
  if (!randaugment.empty()) given.push_back(fmt::format("--randaugment {}", randaugment));
  if (trivial_augment) given.push_back("--trivial-augment");
  if (!auto_augment_policy.empty()) given.push_back(fmt::format("--auto-augment-policy {}", auto_augment_policy));
  DDPX_REQUIRE(given.size() <= 1,
               "{}: give one automatic augmentation per run (torchvision's --auto-augment takes one of ra, ta_wide, "
               "imagenet, ...); drop the others", fmt::join(given, " and "));
  if (!randaugment.empty()) return parse_rand_augment(randaugment);
  if (trivial_augment) return trivial_augment_wide();
  if (!auto_augment_policy.empty()) return parse_auto_augment_policy(auto_augment_policy);
  return {};
}

const SubPolicyOp* auto_augment_sub_policy(AutoAugmentPolicy policy, int index) {
  DDPX_INTERNAL_ASSERT(index >= 0 && index < kSubPolicies, "sub-policy {}", index);
  return policy_table(policy)[static_cast<size_t>(index)].data();
}

std::vector<AugmentDraw> draw_auto_augment(const AutoAugmentSpec& spec, int height, int width, Rng& rng) {
  std::vector<AugmentDraw> draws;
  switch (spec.kind) {
    case AutoAugmentKind::off:
      break;
    case AutoAugmentKind::rand_augment:  // N ops at bin M
      for (int k = 0; k < spec.num_ops; ++k) {
        const auto op = static_cast<AugmentOp>(rng.below(kRandAugmentOps));
        const bool negative = augment_op_signed(op) && rng.below(2) == 1;
        draws.push_back(drawn(spec, op, spec.magnitude, negative, height, width));
      }
      break;
    case AutoAugmentKind::trivial_augment_wide: {  // one op, a bin uniform over all
      const auto op = static_cast<AugmentOp>(rng.below(kRandAugmentOps));
      const int bin = augment_op_has_magnitudes(op) ? static_cast<int>(rng.below(31)) : kNone;
      const bool negative = augment_op_signed(op) && rng.below(2) == 1;
      draws.push_back(drawn(spec, op, bin, negative, height, width));
      break;
    }
    case AutoAugmentKind::auto_augment: {  // a sub-policy; each op with its probability, sign 0 negative
      const SubPolicyOp* sub = auto_augment_sub_policy(spec.policy, static_cast<int>(rng.below(kSubPolicies)));
      for (int k = 0; k < 2; ++k) {
        const float u = uniform_float32(rng);
        const bool negative = rng.below(2) == 0;
        if (u <= static_cast<float>(sub[k].probability))
          draws.push_back(drawn(spec, sub[k].op, sub[k].bin, negative, height, width));
      }
      break;
    }
  }
  return draws;
}

void auto_augment(const AutoAugmentSpec& spec, uint8_t* pixels, int height, int width, int channels, Rng& rng,
                  std::vector<uint8_t>& scratch) {
  for (const AugmentDraw& draw : draw_auto_augment(spec, height, width, rng))
    apply_augment_op(draw.op, draw.magnitude, pixels, height, width, channels, scratch);
}

}  // namespace ddpx
