// uint8 NHWC -> normalized float NCHW; see normalize_pixels.hpp.
#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "core/kernel_launch.cuh"
#include "kernels/device_utils.cuh"
#include "kernels/normalize_pixels.hpp"

namespace ddpx {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxChannels = 4;

struct ChannelConstants {
  float scale[kMaxChannels];
  float shift[kMaxChannels];
};

// One thread per output element, in NCHW order so the float stores coalesce; the uint8 loads stride by channels.
__global__ void normalize_pixels_kernel(const uint8_t* pixels, int64_t batch, int64_t plane, int channels,
                                        ChannelConstants constants, float* images) {
  begin_after_producer();
  const int64_t total = batch * channels * plane;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t p = e % plane;
    const int64_t nc = e / plane;
    const int c = static_cast<int>(nc % channels);
    const int64_t n = nc / channels;
    const float value = static_cast<float>(pixels[(n * plane + p) * channels + c]);
    images[e] = value * constants.scale[c] - constants.shift[c];
  }
}

}  // namespace

void normalize_pixels_on_device(const uint8_t* d_pixels, int64_t batch, int64_t size, int64_t channels,
                                const std::vector<float>& mean, const std::vector<float>& std, float* d_images,
                                cudaStream_t stream) {
  DDPX_REQUIRE(channels >= 1 && channels <= kMaxChannels && static_cast<int64_t>(mean.size()) == channels &&
                   static_cast<int64_t>(std.size()) == channels,
               "normalize_pixels_on_device: {} channels with {} means and {} stds", channels, mean.size(), std.size());
  ChannelConstants constants{};
  for (int64_t c = 0; c < channels; ++c) {
    // The CPU reference's constants, computed the same way (data/pixel_normalization.cpp).
    constants.scale[c] = 1.0f / (255.0f * std[static_cast<size_t>(c)]);
    constants.shift[c] = mean[static_cast<size_t>(c)] / std[static_cast<size_t>(c)];
  }
  const int64_t total = batch * channels * size * size;
  launch_after_producer("normalize_pixels_kernel", normalize_pixels_kernel, kernels::elementwise_blocks(total, kThreads),
                        kThreads, 0, stream, d_pixels, batch, size * size, static_cast<int>(channels), constants,
                        d_images);
}

}  // namespace ddpx
