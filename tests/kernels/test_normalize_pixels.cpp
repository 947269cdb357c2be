// The uint8 batch normalization on the GPU against the CPU reference (data/pixel_normalization.hpp) on fresh
// random pixels: 1 and 3 channels, ImageNet's and other constants, odd sizes; within 1e-6 absolute per element
// (the same constants, one fused multiply-add apart). GPU test: skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/cuda_check.hpp"
#include "core/rng.hpp"
#include "data/pixel_normalization.hpp"
#include "gpu_guard.hpp"
#include "kernels/normalize_pixels.hpp"
#include "model_cuda/device_buffer.hpp"

namespace ddpx {
namespace {

TEST(NormalizePixels, MatchesTheCpuReference) {
  DDPX_REQUIRE_GPU();
  Rng rng(31);
  for (const auto& [batch, size, channels] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{3, 17, 3}, {5, 28, 1}, {2, 224, 3}}) {
    const std::vector<float> mean = channels == 3 ? std::vector<float>{0.485f, 0.456f, 0.406f} : std::vector<float>{0.2860f};
    const std::vector<float> std = channels == 3 ? std::vector<float>{0.229f, 0.224f, 0.225f} : std::vector<float>{0.3530f};
    std::vector<uint8_t> pixels(static_cast<size_t>(batch * size * size * channels));
    for (uint8_t& p : pixels) p = static_cast<uint8_t>(rng.below(256));
    std::vector<float> want(pixels.size());
    normalize_pixels(pixels.data(), batch, size, channels, mean, std, want.data());
    DeviceBuffer<uint8_t> d_pixels(pixels.size(), "pixels");
    d_pixels.upload(pixels);
    DeviceBuffer<float> d_images(pixels.size(), "images");
    normalize_pixels_on_device(d_pixels.get(), batch, size, channels, mean, std, d_images.get(), nullptr);
    DDPX_CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<float> got = d_images.download(pixels.size());
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(double(got[i]) - want[i]));
    EXPECT_LE(worst, 1e-6) << batch << "x" << size << "x" << channels;
  }
}

}  // namespace
}  // namespace ddpx
