// GPU synthetic data: the seed's random images and labels generated where they are used (no host copy).
// Guarantees: the values are those of SyntheticDataset (src/data, non-learnable, rank 0) for the same seed and
// step, up to float rounding of log/sqrt/sin/cos: image elements are standard normal from a counter-based hash of
// (seed, step, image, element); labels are uniform in [0, classes). Deterministic, independent of launch shape.
// One kernel on `stream`; nothing allocated; capturable in a CUDA graph (seed and step are baked into a capture).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace ddpx {

void generate_synthetic_batch(float* d_images, int32_t* d_labels, int64_t batch, int64_t image_numel,
                              int64_t classes, uint64_t seed, uint64_t step, cudaStream_t stream);

}  // namespace ddpx
