// The image pipeline of one sample on a loader thread: decode (JPEG, PNG or raw pixels), crop, resize and convert
// channels into the model's uint8 HWC input.
// Guarantees:
//  - Train (crop_flip): torchvision's RandomResizedCrop(size, scale=(0.08, 1), ratio=(3/4, 4/3)) then
//    RandomHorizontalFlip(0.5); eval: Resize(resize) then CenterCrop(size); both antialiased bilinear
//    (data/image_transform.hpp); then, with TransformSpec::auto_augment, torchvision's RandAugment,
//    TrivialAugmentWide or AutoAugment on the model's channels (data/auto_augment.hpp). The random draws come from
//    `rng` only.
//  - An image with more than max_pixels pixels is refused from its header, before anything of its size is
//    allocated (Note [Pixel limit]); a file that is not a decodable image is refused; errors name the sample
//    (SampleSource::sample_name) and what to do.
#pragma once
#include <cstdint>
#include <vector>

#include "core/rng.hpp"
#include "data/auto_augment.hpp"
#include "data/sample_source.hpp"

namespace ddpx {

struct TransformSpec {
  bool crop_flip = true;  // false: resize + center crop
  int size = 224;         // output side
  int resize = 256;       // eval: the shorter side before the center crop
  int channels = 3;       // the model's
  int64_t max_pixels = 178956970;
  bool dct_scaling = true;  // JPEG: decode at 1/2, 1/4, 1/8 where the crop allows (data/image_decode.hpp)
  AutoAugmentSpec auto_augment;  // --randaugment, --trivial-augment or --auto-augment-policy (training only)
};

// Per-thread buffers reused between samples.
struct PipelineScratch {
  std::vector<uint8_t> file, decoded, resized, augmented;
};

void transform_sample(const SampleSource& source, int64_t index, const TransformSpec& spec, Rng& rng,
                      PipelineScratch& scratch, uint8_t* out);

}  // namespace ddpx
