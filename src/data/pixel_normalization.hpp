// Host normalization of uint8 batches: torchvision's ToTensor then Normalize, out[n, c, y, x] =
// (pixels[n, y, x, c] / 255 - mean[c]) / std[c], computed as pixels * (1 / (255 std)) - mean / std (within
// 1e-6 of torchvision's two-step form, tests/data/test_image_dataset.cpp). The CUDA twin is kernels/normalize_pixels.cu, tested against this.
#pragma once
#include <cstdint>
#include <vector>

namespace ddpx {

void normalize_pixels(const uint8_t* pixels, int64_t batch, int64_t size, int64_t channels,
                      const std::vector<float>& mean, const std::vector<float>& std, float* images);

}  // namespace ddpx
