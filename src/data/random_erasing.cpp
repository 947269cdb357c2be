// torchvision's RandomErasing on a normalized image; see random_erasing.hpp.
#include "data/random_erasing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "core/error.hpp"

namespace ddpx {
namespace {

constexpr float kScaleLow = 0.02f, kScaleHigh = 0.33f;  // torchvision's default scale=(0.02, 0.33)
constexpr float kRatioLow = 0.3f, kRatioHigh = 3.3f;    // ratio=(0.3, 3.3)
constexpr int kTries = 10;

// torch.empty(1).uniform_(lo, hi) in float32 on the CPU: 24 random bits x 2^-24, times (hi - lo), plus lo.
float uniform_float32(Rng& rng, float lo, float hi) {
  const float x = static_cast<float>(rng.next_u64() >> 40) * (1.0f / 16777216.0f);
  return x * (hi - lo) + lo;
}

}  // namespace

std::string RandomErasingSpec::describe() const { return fmt::format("RandomErasing(p={:g})", probability); }

RandomErasingSpec parse_random_erase(std::string_view text) {
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  const bool number = !text.empty() && error == std::errc() && end == text.data() + text.size();
  DDPX_REQUIRE(number && std::isfinite(value) && value >= 0 && value <= 1,
               "--random-erase '{}': give the probability P of erasing a training image, 0 to 1 (torchvision's "
               "--random-erase, RandomErasing(p=P); 0: off)", text);
  return RandomErasingSpec{value};
}

ErasingBox erasing_box(int height, int width, const std::function<float(float, float)>& uniform,
                       const std::function<int64_t(int64_t)>& below) {
  const double area = static_cast<double>(height) * static_cast<double>(width);
  // torch.log(torch.tensor(ratio)): float32 logs of the float32 bounds.
  const float log_low = std::log(kRatioLow), log_high = std::log(kRatioHigh);
  for (int attempt = 0; attempt < kTries; ++attempt) {
    const double erase_area = area * static_cast<double>(uniform(kScaleLow, kScaleHigh));
    const double aspect = static_cast<double>(std::exp(uniform(log_low, log_high)));  // exp in float32
    const auto h = static_cast<int64_t>(std::nearbyint(std::sqrt(erase_area * aspect)));  // round: half to even
    const auto w = static_cast<int64_t>(std::nearbyint(std::sqrt(erase_area / aspect)));
    if (!(h < height && w < width)) continue;
    ErasingBox box;
    box.height = static_cast<int>(h);
    box.width = static_cast<int>(w);
    box.top = static_cast<int>(below(height - h + 1));
    box.left = static_cast<int>(below(width - w + 1));
    return box;
  }
  return {};
}

ErasingBox random_erasing_box(const RandomErasingSpec& spec, int height, int width, Rng& rng) {
  if (!spec.enabled()) return {};
  if (!(uniform_float32(rng, 0.f, 1.f) < static_cast<float>(spec.probability))) return {};
  return erasing_box(
      height, width, [&](float lo, float hi) { return uniform_float32(rng, lo, hi); },
      [&](int64_t n) { return static_cast<int64_t>(rng.below(static_cast<uint64_t>(n))); });
}

void erase_box(const ErasingBox& box, float* image, int channels, int height, int width) {
  if (box.empty()) return;
  for (int c = 0; c < channels; ++c)
    for (int y = box.top; y < box.top + box.height; ++y) {
      float* row = image + (static_cast<int64_t>(c) * height + y) * width + box.left;
      std::fill(row, row + box.width, 0.f);
    }
}

}  // namespace ddpx
