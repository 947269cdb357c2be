// RandAugment (--randaugment N,M) on uint8 HWC images, torchvision.transforms.RandAugment's semantics on a uint8
// tensor (the functional_tensor path: interpolation NEAREST, fill None so outside pixels are 0,
// num_magnitude_bins 31), on the loader threads after the crop and flip, before normalization, as torchvision's
// ViT recipe orders it. Training only: --val is never augmented.
// Guarantees:
//  - rand_augment() draws, per sample, N ops uniformly from the 14 (Identity, ShearX, ShearY, TranslateX,
//    TranslateY, Rotate, Brightness, Color, Contrast, Sharpness, Posterize, Solarize, AutoContrast, Equalize) and,
//    for the signed ones, a sign with odds 1/2, from `rng` only (the image pipeline's per-sample generator keyed by
//    (seed, epoch, position): the same draws whatever the worker count). The stream is ddpx's, not torch's.
//  - augment_op_magnitude() is torchvision's _augmentation_space table entry bit for bit: its float32 linspace as
//    torch 1.13's CPU kernel computes it (Note [torch's linspace in float32]); posterize's bits 8 - round(k / 7.5).
//  - apply_augment_op() is torchvision's _apply_op for that op and signed magnitude on a 1- or 3-channel image,
//    computed with torch's float32 arithmetic in torch's order, so the uint8 result equals torchvision's exactly:
//    blends truncate (_blend's .to(uint8)), AutoContrast scales by reciprocal x 255 as Tensor.__rtruediv__ does,
//    Sharpness keeps the one-pixel border, Equalize is integer. Two documented limits (Note [Where RandAugment can
//    differ from torchvision]): the geometric ops' sampling positions follow torch's float32 grid with OpenBLAS's
//    FMA order, so against a torch on another BLAS a pixel whose position lies within float rounding of a
//    half-pixel tie may take the neighbouring source pixel; Contrast's mean is exact up to 65,793 pixels (a
//    256 x 256 image), beyond that it is the correctly rounded mean where torch sums in float32.
//    tests/data/test_rand_augment.cpp checks every op against torchvision (tools/make_rand_augment_fixtures.py).
//  - parse_rand_augment() refuses anything but "N,M" with 1 <= N <= 16 and 0 <= M <= 30, naming --randaugment.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/rng.hpp"

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
};
constexpr int kAugmentOps = 14;  // in torchvision's _augmentation_space order

struct RandAugmentSpec {
  int num_ops = 0;  // 0: off
  int magnitude = 9;
  int num_magnitude_bins = 31;
  bool enabled() const { return num_ops > 0; }
  std::string describe() const;  // "RandAugment(2, 9)"
};

// "N,M" of --randaugment (torchvision's RandAugment(num_ops=N, magnitude=M)); throws ddpx::Error naming the flag.
RandAugmentSpec parse_rand_augment(std::string_view text);

const char* augment_op_name(AugmentOp op);  // torchvision's name: "ShearX", ...
bool augment_op_signed(AugmentOp op);
// torchvision's magnitudes[bin] for `op` on a height x width image (0 for Identity, AutoContrast, Equalize).
double augment_op_magnitude(AugmentOp op, int bin, int num_bins, int height, int width);

// torchvision's _apply_op(img, op, magnitude, NEAREST, fill=None) on `pixels` (HWC, packed), in place. `scratch`
// is reused between calls.
void apply_augment_op(AugmentOp op, double magnitude, uint8_t* pixels, int height, int width, int channels,
                      std::vector<uint8_t>& scratch);

struct AugmentDraw {
  AugmentOp op = AugmentOp::identity;
  double magnitude = 0;  // signed
};
// The spec's N draws for one image (what rand_augment applies), from `rng`.
std::vector<AugmentDraw> draw_rand_augment(const RandAugmentSpec& spec, int height, int width, Rng& rng);

void rand_augment(const RandAugmentSpec& spec, uint8_t* pixels, int height, int width, int channels, Rng& rng,
                  std::vector<uint8_t>& scratch);

}  // namespace ddpx
