// RandomErasing (--random-erase P): torchvision's transforms.RandomErasing(p=P, scale=(0.02, 0.33),
// ratio=(0.3, 3.3), value=0) as its classification preset applies it, on the normalized float image after
// Normalize (so an erased pixel is 0: the mean colour). Training data only (--val never), on the loader threads.
// Guarantees:
//  - erasing_box() is RandomErasing.get_params for those arguments given the same draws: up to 10 tries of an
//    area fraction uniform in [0.02, 0.33) and a log aspect ratio uniform in [log 0.3, log 3.3) (float32, as
//    torch's uniform_ and log), h = round(sqrt(area x ratio)), w = round(sqrt(area / ratio)) (Python's round,
//    half to even), kept when h < height and w < width; then the top row uniform in [0, height - h] and the left
//    column in [0, width - w]. Ten misses: no box (torchvision erases the image with itself). Checked against
//    get_params replaying its draws (tests/data/test_random_erasing.cpp, tools/make_auto_augment_fixtures.py).
//  - random_erasing_box() draws from `rng` only: erase when a float32 uniform (torch.rand's 24 bits) is below
//    float32(P), then erasing_box with float32 uniforms and Rng::below. The generator is the sample's own, keyed
//    by (seed, epoch, position) (data/image_dataset.hpp), so the boxes do not depend on the worker count and a
//    resume continues them exactly. The stream is ddpx's, not torch's.
//  - parse_random_erase() takes P in [0, 1] (0: off) and refuses anything else naming --random-erase.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/rng.hpp"

namespace ddpx {

struct RandomErasingSpec {
  double probability = 0;  // 0: off
  bool enabled() const { return probability > 0; }
  std::string describe() const;  // "RandomErasing(p=0.25)"
};

RandomErasingSpec parse_random_erase(std::string_view text);

struct ErasingBox {
  int top = 0, left = 0, height = 0, width = 0;  // height 0: nothing erased
  bool empty() const { return height == 0 || width == 0; }
};

// RandomErasing.get_params(img of height x width, scale=(0.02, 0.33), ratio=(0.3, 3.3)) with its draws from
// `uniform(lo, hi)` (a float32 uniform in [lo, hi), torch.empty(1).uniform_(lo, hi)) and `below(n)` (an integer
// uniform in [0, n), torch.randint(0, n)).
ErasingBox erasing_box(int height, int width, const std::function<float(float, float)>& uniform,
                       const std::function<int64_t(int64_t)>& below);

// Whether to erase (odds P) and where, for one height x width image, from `rng`.
ErasingBox random_erasing_box(const RandomErasingSpec& spec, int height, int width, Rng& rng);

// Sets the box to 0 in every channel of a CHW float image.
void erase_box(const ErasingBox& box, float* image, int channels, int height, int width);

}  // namespace ddpx
