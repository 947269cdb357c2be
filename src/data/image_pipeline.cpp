// One sample from bytes to the model's uint8 input; see image_pipeline.hpp.
//
// Note [Pixel limit]
// A decompression bomb is a small file whose header claims a huge image (100,000 x 100,000 pixels: 30 GB of RGB).
// Every format's header is read first and its width x height compared with --max-pixels before any buffer of
// that size exists; PIL's default limit (2 x 89,478,485 pixels, where PIL raises DecompressionBombError) is ours.
#include "data/image_pipeline.hpp"

#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "data/image_decode.hpp"
#include "data/image_transform.hpp"
#include "data/auto_augment.hpp"

namespace ddpx {

void transform_sample(const SampleSource& source, int64_t index, const TransformSpec& spec, Rng& rng,
                      PipelineScratch& scratch, uint8_t* out) {
  const SampleBytes bytes = source.read(index, scratch.file);
  DecodeRequest request;
  request.choose_box = [&](int height, int width) {
    return spec.crop_flip ? random_resized_crop_box(height, width, rng)
                          : center_crop_box(height, width, spec.resize, spec.size);
  };
  request.box_bounds_sampling = spec.crop_flip;  // torchvision crops, then resizes the crop alone
  request.out_size = spec.size;
  request.dct_scaling = spec.dct_scaling;
  request.max_pixels = spec.max_pixels;
  request.name = [&] { return source.sample_name(index); };
  const DecodedRegion region = decode_sample(bytes, request, scratch.decoded);
  DDPX_REQUIRE(region.view.channels == 1 || region.view.channels == 3,
               "{}: {} channels; ddpx reads gray or RGB images", source.sample_name(index), region.view.channels);
  const bool flip = spec.crop_flip && rng.uniform() < 0.5;
  if (region.view.channels == spec.channels) {
    resample(region.view, region.box, spec.size, spec.size, flip, out);
  } else {
    // Gray to RGB commutes with resampling (the same weights on equal channels); RGB to gray after it is PIL's
    // luma of the resampled pixels, within a level of converting first.
    const int64_t out_pixels = static_cast<int64_t>(spec.size) * spec.size;
    scratch.resized.resize(static_cast<size_t>(out_pixels * region.view.channels));
    resample(region.view, region.box, spec.size, spec.size, flip, scratch.resized.data());
    convert_channels(scratch.resized.data(), static_cast<int>(out_pixels), region.view.channels, spec.channels, out);
  }
  // After the crop and flip, before normalization (torchvision's ViT recipe), on the model's channels.
  if (spec.auto_augment.enabled())
    auto_augment(spec.auto_augment, out, spec.size, spec.size, spec.channels, rng, scratch.augmented);
}

}  // namespace ddpx
