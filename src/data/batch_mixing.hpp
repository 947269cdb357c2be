// Mixup and cutmix over a batch (--mixup A --cutmix B), torchvision's formulas (transforms.v2.MixUp and CutMix,
// the same as references/classification/transforms.py's RandomMixup/RandomCutmix at p = 1): each image is mixed
// with its partner, the batch rolled by one (row b's partner is row b - 1, row 0's the last); lambda ~ Beta(A, A)
// (mixup) or Beta(B, B) (cutmix); with both given each batch picks one with equal odds. Cutmix pastes the partner's
// box of half-sides (int(r W), int(r H)), r = sqrt(1 - lambda) / 2, centred at a uniform pixel and clipped to the
// image, and sets lambda to the part of the image that stayed. The loss then uses the soft targets
// lambda * onehot(label) + (1 - lambda) * onehot(partner's label) (model/cross_entropy.hpp ClassTargets).
// Guarantees: apply_mix() given a draw computes exactly what torchvision computes in fp32 (mixup: rolled * (1 - l) +
// image * l, each product rounded to fp32; cutmix: a copy) - tests/data/test_batch_mixing.cpp against
// tools/make_recipe_fixtures.py with fixed draws; draw_mix() is deterministic in the Rng's state (so every rank that
// draws from its own seeded stream, and a resumed run, draws the same sequence).
#pragma once
#include <cstdint>
#include <vector>

#include "core/rng.hpp"

namespace ddpx {

enum class MixKind { none, mixup, cutmix };

struct MixSettings {
  double mixup_alpha = 0, cutmix_alpha = 0;  // 0: off
  bool enabled() const { return mixup_alpha > 0 || cutmix_alpha > 0; }
  // Throws ddpx::Error naming --mixup or --cutmix unless each is finite and >= 0.
  void validate() const;
};

struct MixDraw {
  MixKind kind = MixKind::none;
  double lambda = 1.0;                  // the weight of each image's own label (cutmix: after the box is clipped)
  int64_t x1 = 0, y1 = 0, x2 = 0, y2 = 0;  // cutmix: the pasted box [y1, y2) x [x1, x2)
};

// Beta(alpha, alpha) from two gamma draws (Marsaglia-Tsang).
double sample_beta(Rng& rng, double alpha);
// Cutmix's box for a drawn lambda and centre (r_x in [0, width), r_y in [0, height)), lambda adjusted.
MixDraw cutmix_draw(double lambda, int64_t r_x, int64_t r_y, int64_t height, int64_t width);
MixDraw draw_mix(Rng& rng, const MixSettings& settings, int64_t height, int64_t width);

// Mixes `images` (NCHW, fp32) in place and writes each row's partner label into mixed_labels.
void apply_mix(float* images, const int32_t* labels, int32_t* mixed_labels, int64_t batch, int64_t channels,
               int64_t height, int64_t width, const MixDraw& draw);

}  // namespace ddpx
