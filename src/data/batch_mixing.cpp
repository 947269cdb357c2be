// Mixup and cutmix (see batch_mixing.hpp).
#include "data/batch_mixing.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.hpp"

namespace ddpx {
namespace {

// Gamma(shape, 1), Marsaglia and Tsang (2000); shape < 1 through Gamma(shape + 1) * U^(1 / shape).
double sample_gamma(Rng& rng, double shape) {
  if (shape < 1) return sample_gamma(rng, shape + 1) * std::pow(std::max(rng.uniform(), 1e-300), 1.0 / shape);
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    double x, v;
    do {
      x = rng.normal();
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = rng.uniform();
    if (u < 1 - 0.0331 * x * x * x * x || std::log(std::max(u, 1e-300)) < 0.5 * x * x + d * (1 - v + std::log(v)))
      return d * v;
  }
  return d;  // unreachable in practice: each attempt is accepted with probability > 0.95
}

}  // namespace

void MixSettings::validate() const {
  DDPX_REQUIRE(std::isfinite(mixup_alpha) && mixup_alpha >= 0,
               "--mixup must be a finite number >= 0 (Beta(A, A)'s alpha; 0: off), got {}", mixup_alpha);
  DDPX_REQUIRE(std::isfinite(cutmix_alpha) && cutmix_alpha >= 0,
               "--cutmix must be a finite number >= 0 (Beta(B, B)'s alpha; 0: off), got {}", cutmix_alpha);
}

double sample_beta(Rng& rng, double alpha) {
  const double a = sample_gamma(rng, alpha), b = sample_gamma(rng, alpha);
  return a + b > 0 ? a / (a + b) : 0.5;
}

MixDraw cutmix_draw(double lambda, int64_t r_x, int64_t r_y, int64_t height, int64_t width) {
  const double r = 0.5 * std::sqrt(1.0 - lambda);
  const auto half_w = static_cast<int64_t>(r * static_cast<double>(width));
  const auto half_h = static_cast<int64_t>(r * static_cast<double>(height));
  MixDraw draw;
  draw.kind = MixKind::cutmix;
  draw.x1 = std::max<int64_t>(r_x - half_w, 0);
  draw.y1 = std::max<int64_t>(r_y - half_h, 0);
  draw.x2 = std::min<int64_t>(r_x + half_w, width);
  draw.y2 = std::min<int64_t>(r_y + half_h, height);
  draw.lambda = 1.0 - static_cast<double>((draw.x2 - draw.x1) * (draw.y2 - draw.y1)) /
                          static_cast<double>(width * height);
  return draw;
}

MixDraw draw_mix(Rng& rng, const MixSettings& settings, int64_t height, int64_t width) {
  if (!settings.enabled()) return {};
  const bool both = settings.mixup_alpha > 0 && settings.cutmix_alpha > 0;
  const bool cutmix = both ? rng.below(2) == 1 : settings.cutmix_alpha > 0;
  if (!cutmix) return {.kind = MixKind::mixup, .lambda = sample_beta(rng, settings.mixup_alpha)};
  const double lambda = sample_beta(rng, settings.cutmix_alpha);
  const auto r_x = static_cast<int64_t>(rng.below(static_cast<uint64_t>(width)));
  const auto r_y = static_cast<int64_t>(rng.below(static_cast<uint64_t>(height)));
  return cutmix_draw(lambda, r_x, r_y, height, width);
}

void apply_mix(float* images, const int32_t* labels, int32_t* mixed_labels, int64_t batch, int64_t channels,
               int64_t height, int64_t width, const MixDraw& draw) {
  if (draw.kind == MixKind::none || batch < 1) return;
  for (int64_t b = 0; b < batch; ++b) mixed_labels[b] = labels[(b + batch - 1) % batch];
  const int64_t image = channels * height * width;
  // Row b reads row b - 1 as it was: keep the last row's original for row 0 and walk from the end.
  std::vector<float> last(images + (batch - 1) * image, images + batch * image);
  const auto own = static_cast<float>(draw.lambda), other = static_cast<float>(1.0 - draw.lambda);
  for (int64_t b = batch - 1; b >= 0; --b) {
    float* row = images + b * image;
    const float* partner = b == 0 ? last.data() : images + (b - 1) * image;
    if (draw.kind == MixKind::mixup) {
      for (int64_t i = 0; i < image; ++i) row[i] = partner[i] * other + row[i] * own;
      continue;
    }
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t y = draw.y1; y < draw.y2; ++y)
        std::memcpy(row + (c * height + y) * width + draw.x1, partner + (c * height + y) * width + draw.x1,
                    static_cast<size_t>(draw.x2 - draw.x1) * sizeof(float));
  }
}

}  // namespace ddpx
