// Synthetic batch kernel; see synthetic_data.hpp. The hash (splitmix64 finalizer) and key derivation mirror
// src/data/synthetic_dataset.cpp: label_key / image_key = mix(mix(mix(seed ^ stream) + step) + rank), rank 0;
// element pair i of image b uses mix(image_key + b * 2^32 + i) -> two 24-bit uniforms -> Box-Muller.
#include "core/error.hpp"
#include "core/cuda_check.hpp"
#include "core/kernel_launch.cuh"
#include "kernels/device_utils.cuh"
#include "kernels/synthetic_data.hpp"

namespace ddpx {
namespace {

constexpr int kThreads = 256;
constexpr uint64_t kLabelStream = 0x6c6162656cULL;  // "label"
constexpr uint64_t kImageStream = 0x696d616765ULL;  // "image"

__host__ __device__ __forceinline__ uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t batch_key(uint64_t seed, uint64_t step, uint64_t stream) { return mix64(mix64(mix64(seed ^ stream) + step)); }

__global__ void synthetic_kernel(float* images, int32_t* labels, int64_t batch, int64_t numel, int64_t classes,
                                 uint64_t image_key, uint64_t label_key) {
  begin_after_producer();
  const int64_t pairs_per_image = (numel + 1) / 2, total = batch * pairs_per_image;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t b = e / pairs_per_image, i = 2 * (e % pairs_per_image);
    const uint64_t h = mix64(image_key + static_cast<uint64_t>(b) * 0x100000000ULL + static_cast<uint64_t>(i));
    constexpr float kInv24 = 1.0f / 16777216.0f;
    const float u1 = (static_cast<float>(h >> 40) + 0.5f) * kInv24;
    const float u2 = static_cast<float>((h >> 16) & 0xFFFFFF) * kInv24;
    const float r = sqrtf(-2.0f * logf(u1)), angle = 6.28318530717958647f * u2;
    float* image = images + b * numel;
    image[i] = r * cosf(angle);
    if (i + 1 < numel) image[i + 1] = r * sinf(angle);
    if (i == 0) labels[b] = static_cast<int32_t>(mix64(label_key + static_cast<uint64_t>(b)) %
                                                 static_cast<uint64_t>(classes));
  }
}

}  // namespace

void generate_synthetic_batch(float* d_images, int32_t* d_labels, int64_t batch, int64_t image_numel,
                              int64_t classes, uint64_t seed, uint64_t step, cudaStream_t stream) {
  DDPX_REQUIRE(batch > 0 && image_numel > 0 && classes > 0,
               "generate_synthetic_batch: batch {}, image size {} and classes {} must be positive", batch,
               image_numel, classes);
  const int64_t total = batch * ((image_numel + 1) / 2);
  launch_after_producer("synthetic_kernel", synthetic_kernel, kernels::elementwise_blocks(total, kThreads), kThreads, 0,
                        stream, d_images, d_labels, batch, image_numel, classes, batch_key(seed, step, kImageStream),
                        batch_key(seed, step, kLabelStream));
}

}  // namespace ddpx
