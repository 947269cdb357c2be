// GPU normalization of uint8 image batches: the CUDA twin of data/pixel_normalization.hpp (torchvision's
// ToTensor + Normalize): images[n, c, y, x] = pixels[n, y, x, c] * scale[c] - shift[c], with scale = 1 / (255 std)
// and shift = mean / std computed on the host in float exactly as the CPU reference computes them, so the two
// agree to float rounding of one fused multiply-add (tests/kernels/test_normalize_pixels.cpp: 1e-6).
// Guarantees: one kernel on `stream`; reads batch*size*size*channels bytes, writes as many floats; nothing
// allocated; the per-channel constants travel as kernel arguments (at most 4 channels), so a launch is capturable
// in a CUDA graph whatever the host memory holds afterwards.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

namespace ddpx {

void normalize_pixels_on_device(const uint8_t* d_pixels, int64_t batch, int64_t size, int64_t channels,
                                const std::vector<float>& mean, const std::vector<float>& std, float* d_images,
                                cudaStream_t stream);

}  // namespace ddpx
