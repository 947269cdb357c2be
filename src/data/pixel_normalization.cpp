// Host normalization; see pixel_normalization.hpp.
#include "data/pixel_normalization.hpp"

#include "core/internal_assert.hpp"
#include "data/dataset.hpp"

namespace ddpx {

void normalize_pixels(const uint8_t* pixels, int64_t batch, int64_t size, int64_t channels,
                      const std::vector<float>& mean, const std::vector<float>& std, float* images) {
  DDPX_INTERNAL_ASSERT(static_cast<int64_t>(mean.size()) == channels && static_cast<int64_t>(std.size()) == channels,
                       "normalization for {} channels, {} means, {} stds", channels, mean.size(), std.size());
  const int64_t plane = size * size;
  for (int64_t c = 0; c < channels; ++c) {
    const float scale = 1.0f / (255.0f * std[static_cast<size_t>(c)]);
    const float shift = mean[static_cast<size_t>(c)] / std[static_cast<size_t>(c)];
    for (int64_t n = 0; n < batch; ++n) {
      const uint8_t* src = pixels + n * plane * channels + c;
      float* dst = images + (n * channels + c) * plane;
      for (int64_t p = 0; p < plane; ++p) dst[p] = static_cast<float>(src[p * channels]) * scale - shift;
    }
  }
}

std::vector<float> PixelNormalization::mean_for(int64_t channels) const {
  if (!mean.empty()) return mean;
  if (channels == 1) return {0.449f};
  return {0.485f, 0.456f, 0.406f};
}

std::vector<float> PixelNormalization::std_for(int64_t channels) const {
  if (!std.empty()) return std;
  if (channels == 1) return {0.226f};
  return {0.229f, 0.224f, 0.225f};
}

}  // namespace ddpx
