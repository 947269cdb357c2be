// The image ops of torchvision's automatic augmentations (RandAugment, TrivialAugmentWide, AutoAugment: their
// _apply_op and _augmentation_space) on uint8 HWC images, as torchvision computes them on a uint8 tensor (the
// functional_tensor path: interpolation NEAREST, fill None so outside pixels are 0). One table for all three
// policies (data/auto_augment.hpp draws from it).
// Guarantees:
//  - augment_op_magnitude() is torchvision's _augmentation_space entry bit for bit, for RandAugment's and
//    AutoAugment's ranges (AugmentRanges::standard) and TrivialAugmentWide's (wide): its float32 linspace as torch
//    1.13's CPU kernel computes it (Note [torch's linspace in float32]); Posterize's bits 8 - round(bin / ((bins -
//    1) / k)), k 4 (standard) or 6 (wide).
//  - apply_augment_op() is torchvision's _apply_op for that op and signed magnitude on a 1- or 3-channel image,
//    computed with torch's float32 arithmetic in torch's order, so the uint8 result equals torchvision's exactly:
//    blends truncate (_blend's .to(uint8)), AutoContrast scales by reciprocal x 255 as Tensor.__rtruediv__ does,
//    Sharpness keeps the one-pixel border, Equalize is integer, Invert is 255 - v. Two documented limits (Note
//    [Where the augmentation ops can differ from torchvision]): the geometric ops' sampling positions follow torch's float32
//    grid with OpenBLAS's FMA order, so against a torch on another BLAS a pixel whose position lies within float
//    rounding of a half-pixel tie may take the neighbouring source pixel; Contrast's mean is exact up to 65,793
//    pixels (a 256 x 256 image), beyond that it is the correctly rounded mean where torch sums in float32.
//    tests/data/test_rand_augment.cpp and test_auto_augment.cpp check every op against torchvision
//    (tools/make_rand_augment_fixtures.py, tools/make_auto_augment_fixtures.py).
#pragma once
#include <cstdint>
#include <vector>

namespace ddpx {

enum class AugmentOp : uint8_t {
  identity,
  shear_x,
  shear_y,
  translate_x,
  translate_y,
  rotate,
  brightness,
  color,
  contrast,
  sharpness,
  posterize,
  solarize,
  auto_contrast,
  equalize,
  invert,  // AutoAugment's policies only
};
constexpr int kAugmentOps = 15;
// The ops RandAugment and TrivialAugmentWide draw from: the first 14, in torchvision's _augmentation_space order.
constexpr int kRandAugmentOps = 14;

// Which magnitude ranges: RandAugment's and AutoAugment's (shear 0.3, translate 150/331 of the side, rotate 30,
// enhance 0.9, posterize to 4 bits) or TrivialAugmentWide's (0.99, 32 pixels, 135, 0.99, to 2 bits).
enum class AugmentRanges : uint8_t { standard, wide };

const char* augment_op_name(AugmentOp op);  // torchvision's name: "ShearX", ...
bool augment_op_signed(AugmentOp op);
// Whether the op takes a magnitude from a table (false: Identity, AutoContrast, Equalize, Invert, whose
// _augmentation_space entry is a 0-dim tensor: no bin is drawn for them).
bool augment_op_has_magnitudes(AugmentOp op);
// torchvision's magnitudes[bin] for `op` on a height x width image (0 for the ops without magnitudes).
double augment_op_magnitude(AugmentOp op, int bin, int num_bins, int height, int width,
                            AugmentRanges ranges = AugmentRanges::standard);

// torchvision's _apply_op(img, op, magnitude, NEAREST, fill=None) on `pixels` (HWC, packed), in place. `scratch`
// is reused between calls.
void apply_augment_op(AugmentOp op, double magnitude, uint8_t* pixels, int height, int width, int channels,
                      std::vector<uint8_t>& scratch);

}  // namespace ddpx
