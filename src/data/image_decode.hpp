// JPEG (libjpeg-turbo's libjpeg API) and PNG (libspng) decoding into 8-bit gray or RGB, decoding only what the
// crop needs.
// Guarantees:
//  - The header is read first; width x height above max_pixels is refused before any pixel buffer exists (Note
//    [Pixel limit], data/image_pipeline.cpp), as are zero sizes.
//  - JPEG: gray stays gray, YCbCr becomes RGB (libjpeg's conversion, as PIL's), CMYK and YCCK (Adobe, inverted or
//    not) become RGB as PIL's convert("RGB") does: R = (255 - C)(255 - K) / 255. A crop that bounds the sampling
//    (RandomResizedCrop) decodes only its rows (jpeg_skip_scanlines) and its iMCU-aligned columns
//    (jpeg_crop_scanline), each with a 16-pixel margin so chroma upsampling gives the full decode's pixels.
//  - With dct_scaling, a crop at least 5 times the output size on both axes is decoded at 1/2, 1/4 or 1/8 scale in
//    the DCT domain (libjpeg's scale_denom), the largest that still leaves 2.5 times the output size (Note [DCT
//    scale from its error], image_decode.cpp): faster, and after the resample within 1.5 levels on average of a full
//    decode's (tests/data/test_photograph_pixels.cpp, on photographs at 224, 64 and 32: worst mean 0.64).
//  - PNG: palette and 8-bit gray with alpha become 8-bit RGB, alpha dropped as PIL's convert("RGB"); 8-bit gray
//    stays 1 channel. 16-bit channels are read from their high byte (v >> 8, libspng's conversion): 16-bit RGB(A)
//    as PIL reads it; 16-bit gray becomes RGB from the high byte where PIL's convert("RGB") clips the 16-bit value
//    to 255 (a mostly white image), so such files differ from torchvision's tensors: convert them to 8 bits to match.
//  - A truncated or corrupt file is an error naming the sample and saying to replace or remove it; libjpeg's own
//    message is quoted. Nothing is written outside the returned view.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/image_transform.hpp"
#include "data/sample_source.hpp"

namespace ddpx {

struct DecodedRegion {
  ImageView view;  // the decoded pixels the resampler may read (all of them are inside the image)
  CropBox box;     // the crop, in view coordinates
};

struct DecodeRequest {
  // Picks the crop from the image's size (height, width): called once, after the header, before decoding.
  std::function<CropBox(int height, int width)> choose_box;
  bool box_bounds_sampling = false;  // RandomResizedCrop: pixels outside the box are never read
  int out_size = 224;
  bool dct_scaling = true;
  int64_t max_pixels = 0;
  std::function<std::string()> name;  // the sample's name, for errors
};

DecodedRegion decode_jpeg(const uint8_t* data, size_t size, const DecodeRequest& request, std::vector<uint8_t>& buffer);
DecodedRegion decode_png(const uint8_t* data, size_t size, const DecodeRequest& request, std::vector<uint8_t>& buffer);

// Raw pixels through the same rules (limit, crop bounds) as the decoders.
DecodedRegion crop_raw(const ImageView& image, const DecodeRequest& request);

// One sample as SampleSource::read gives it, by its format: raw pixels through crop_raw, a JPEG or PNG file
// through its decoder (into `buffer`).
DecodedRegion decode_sample(const SampleBytes& bytes, const DecodeRequest& request, std::vector<uint8_t>& buffer);

// Refuses width x height above the limit (or zero); shared by every format.
void check_pixel_limit(int64_t height, int64_t width, const DecodeRequest& request);

}  // namespace ddpx
