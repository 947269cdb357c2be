// torchvision's image transforms on uint8 HWC images, computed the way torchvision computes them.
// Guarantees:
//  - random_resized_crop_box() is torchvision.transforms.RandomResizedCrop.get_params (10 tries, then the
//    ratio-clamped center crop), drawing from `rng`; center_crop_box() is Resize(shorter side to `resize`) then
//    CenterCrop(size), expressed as a (fractional) box on the source image.
//  - resample() is torch's antialiased bilinear interpolation (interpolate(..., mode="bilinear", antialias=True),
//    the same filter as PIL's BILINEAR resize): a triangle filter widened by the scale when shrinking, weights
//    normalized per output pixel, taps clamped to the source's bounds, separable (width, then height) in float,
//    rounded half to even into uint8. tests/data/test_image_transform.cpp checks it against torchvision's output
//    (fixtures from tools/make_transform_fixtures.py): at most 1 level apart.
//  - Source pixels outside [0, width) x [0, height) are never read.
#pragma once
#include <cstdint>

#include "core/rng.hpp"

namespace ddpx {

struct ImageView {  // HWC, rows `stride` bytes apart
  const uint8_t* pixels = nullptr;
  int height = 0, width = 0, channels = 0;
  int64_t stride = 0;
};

struct CropBox {  // source coordinates; fractional for the eval transform
  double top = 0, left = 0, height = 0, width = 0;
};

CropBox random_resized_crop_box(int height, int width, Rng& rng, double scale_min = 0.08, double scale_max = 1.0,
                                double ratio_min = 3.0 / 4.0, double ratio_max = 4.0 / 3.0);
// The eval transform's resize side for a `size` crop: int(size / crop_pct) as torchvision's reference scripts and
// timm compute it (truncated, never rounded: 32 -> 36, 224 -> 256), crop_pct 0.875 by default.
int eval_resize_side(int size, double crop_pct = 0.875);

// Resize so the shorter side is `resize` (the longer one int(resize * long / short), as torchvision), then take the
// centered `size` x `size` (torchvision's int(round((resized - size) / 2)) offsets).
CropBox center_crop_box(int height, int width, int resize, int size);

// Resamples `box` of `source` to out_height x out_width x source.channels (HWC, packed) into `out`. With flip the
// output is mirrored left to right (RandomHorizontalFlip after the crop).
void resample(const ImageView& source, const CropBox& box, int out_height, int out_width, bool flip, uint8_t* out);

// HWC uint8 with `from` channels to `to` channels (out must not overlap in): 1 -> 3 repeats the gray value; 3 -> 1 is
// PIL's convert("L") luma (R*299/1000 + G*587/1000 + B*114/1000 in PIL's fixed point), as torchvision's
// Grayscale.
void convert_channels(const uint8_t* in, int pixels, int from, int to, uint8_t* out);

}  // namespace ddpx
