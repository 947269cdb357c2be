// torchvision's automatic augmentation policies on uint8 HWC images, drawing from the one op table
// (data/augment_ops.hpp): RandAugment (--randaugment N,M), TrivialAugmentWide (--trivial-augment) and AutoAugment
// (--auto-augment-policy imagenet|cifar10|svhn), as torchvision.transforms.autoaugment's classes with their
// defaults (interpolation NEAREST, fill None; RandAugment and TrivialAugmentWide 31 magnitude bins, AutoAugment
// 10). On the loader threads after the crop and flip, before normalization, as torchvision's ViT recipe orders it;
// training only: --val is never augmented. At most one policy per run.
// Guarantees:
//  - draw_auto_augment() draws from `rng` only (the image pipeline's per-sample generator keyed by (seed, epoch,
//    position): the same draws whatever the worker count, and a resume continues them exactly), with torchvision's
//    odds; the stream is ddpx's, not torch's:
//    RandAugment: N times an op uniform over the 14, a sign with odds 1/2 for the signed ones, magnitude bin M.
//    TrivialAugmentWide: one op uniform over the 14, a bin uniform over 31 for the ops with magnitudes, then a sign
//    for the signed ones; its wide ranges (AugmentRanges::wide).
//    AutoAugment: one of the policy's 25 sub-policies uniformly; for each of its two ops a float32 uniform u in
//    [0, 1) (torch.rand's 24 bits) and a sign; the op applies when u <= its probability (as float32, torch's
//    comparison), negated when signed and the sign is 0; its magnitude bin of the 10 (None: 0).
//  - The policies' sub-policy tables are torchvision 0.14's (tests/data/test_auto_augment.cpp compares them with
//    the fixture tools/make_auto_augment_fixtures.py dumps).
//  - The parsers refuse bad values and choose_auto_augment() refuses two policies at once, naming the flags.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/rng.hpp"
#include "data/augment_ops.hpp"

namespace ddpx {

enum class AutoAugmentKind : uint8_t { off, rand_augment, trivial_augment_wide, auto_augment };
enum class AutoAugmentPolicy : uint8_t { imagenet, cifar10, svhn };  // torchvision's AutoAugmentPolicy

struct AutoAugmentSpec {
  AutoAugmentKind kind = AutoAugmentKind::off;
  int num_ops = 2;    // RandAugment's N
  int magnitude = 9;  // RandAugment's M
  AutoAugmentPolicy policy = AutoAugmentPolicy::imagenet;  // AutoAugment's
  bool enabled() const { return kind != AutoAugmentKind::off; }
  int num_magnitude_bins() const { return kind == AutoAugmentKind::auto_augment ? 10 : 31; }
  AugmentRanges ranges() const {
    return kind == AutoAugmentKind::trivial_augment_wide ? AugmentRanges::wide : AugmentRanges::standard;
  }
  // torchvision's repr: "RandAugment(num_ops=2, magnitude=9)", "TrivialAugmentWide(num_magnitude_bins=31)",
  // "AutoAugment(policy=imagenet)"; "off".
  std::string describe() const;
  // The ddpx flag that asks for it: "--randaugment 2,9", "--trivial-augment", "--auto-augment-policy imagenet".
  std::string flag() const;
};

// "N,M" of --randaugment (torchvision's RandAugment(num_ops=N, magnitude=M)); throws ddpx::Error naming the flag.
AutoAugmentSpec parse_rand_augment(std::string_view text);
// imagenet | cifar10 | svhn of --auto-augment-policy (torchvision's AutoAugment(AutoAugmentPolicy.X)).
AutoAugmentSpec parse_auto_augment_policy(std::string_view text);
AutoAugmentSpec trivial_augment_wide();
// The run's one policy from the three flags (empty / false: not given); refuses two or three, naming them.
AutoAugmentSpec choose_auto_augment(std::string_view randaugment, bool trivial_augment,
                                    std::string_view auto_augment_policy);

const char* auto_augment_policy_name(AutoAugmentPolicy policy);  // "imagenet", ...

// One op of an AutoAugment sub-policy: applied with probability `probability`, at magnitude bin `bin` (-1: None).
struct SubPolicyOp {
  AugmentOp op;
  double probability;
  int bin;
};
constexpr int kSubPolicies = 25;
// The policy's sub-policy `index` (0 to 24): two ops, applied in order.
const SubPolicyOp* auto_augment_sub_policy(AutoAugmentPolicy policy, int index);

struct AugmentDraw {
  AugmentOp op = AugmentOp::identity;
  double magnitude = 0;  // signed
};
// The ops the spec applies to one height x width image, in order, from `rng`.
std::vector<AugmentDraw> draw_auto_augment(const AutoAugmentSpec& spec, int height, int width, Rng& rng);

void auto_augment(const AutoAugmentSpec& spec, uint8_t* pixels, int height, int width, int channels, Rng& rng,
                  std::vector<uint8_t>& scratch);

}  // namespace ddpx
