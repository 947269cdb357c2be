// JPEG and PNG decoding; see image_decode.hpp.
#include "data/image_decode.hpp"

#include <spng.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <memory>

// clang-format off
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

#include "core/error.hpp"
#include "core/internal_assert.hpp"

namespace ddpx {
namespace {

// libjpeg reports fatal errors through error_exit, which must not return: we longjmp back to decode_jpeg, which
// destroys the decompressor and throws. Between setjmp and the jump only libjpeg's frames run (no C++ objects).
struct JpegErrors {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool truncated = false;
};

void jpeg_error_exit(j_common_ptr info) {
  auto* errors = reinterpret_cast<JpegErrors*>(info->err);
  (*info->err->format_message)(info, errors->message);
  std::longjmp(errors->jump, 1);
}

void jpeg_emit_message(j_common_ptr info, int level) {
  // Warnings (level -1): a premature end of data means a truncated file, which libjpeg would pad with gray.
  if (level < 0 && info->err->msg_code == JWRN_JPEG_EOF) reinterpret_cast<JpegErrors*>(info->err)->truncated = true;
}

int muldiv255(int a, int b) {  // PIL's MULDIV255: a * b / 255 rounded
  const int t = a * b + 128;
  return ((t >> 8) + t) >> 8;
}

// Note [DCT scale from its error]
// libjpeg's scaled IDCT turns each 8x8 block into 4x4, 2x2 or 1x1 pixels: a box-like filter with aliasing that the
// antialiased bilinear resample after it hides only when it still averages a few scaled pixels per output pixel.
// Scaling as far as the output side itself (crop / denom >= out) broke the documented bound (mean |difference| from
// a full decode's result under 1.5 levels): 5.84 levels at out 32 on a wallpaper, 4.24 on scikit-image's
// photographs. Measured on those (tests/data/test_photograph_pixels.cpp: the eval crop and 8 RandomResizedCrops of
// 7 photographs at 224, 64 and 32), the worst mean was 1.29 levels keeping the scaled crop at least twice the output
// side, 0.64 at 2.5 times, 0.45 at 3 times; 2.5 keeps a margin under the bound and still scales most crops at 32
// (62 of 63) and the largest at 224 (a 1234-pixel crop at 1/2).
int dct_denominator(const CropBox& box, int out_size) {
  constexpr double kScaledPixelsPerOutputPixel = 2.5;  // see the Note
  for (int denom : {8, 4, 2})
    if (box.height / denom >= kScaledPixelsPerOutputPixel * out_size &&
        box.width / denom >= kScaledPixelsPerOutputPixel * out_size)
      return denom;
  return 1;
}

[[noreturn]] void fail_decode(const DecodeRequest& request, const char* format, const std::string& why) {
  fail("{}: not a readable {} ({}); replace or remove the file", request.name(), format, why);
}

}  // namespace

void check_pixel_limit(int64_t height, int64_t width, const DecodeRequest& request) {
  DDPX_REQUIRE(height > 0 && width > 0,
               "{}: the image header says {} x {} pixels; the file is damaged: replace or remove it", request.name(),
               width, height);
  DDPX_REQUIRE(height * width <= request.max_pixels,
               "{}: the image claims {} x {} = {} pixels, above the limit of {} (a decompression bomb, or an image "
               "far larger than training needs): shrink it, or raise --max-pixels if it is genuine",
               request.name(), width, height, height * width, request.max_pixels);
}

DecodedRegion crop_raw(const ImageView& image, const DecodeRequest& request) {
  check_pixel_limit(image.height, image.width, request);
  const CropBox box = request.choose_box(image.height, image.width);
  if (!request.box_bounds_sampling) return {image, box};
  const int top = static_cast<int>(box.top), left = static_cast<int>(box.left);
  const ImageView crop{image.pixels + static_cast<int64_t>(top) * image.stride + static_cast<int64_t>(left) * image.channels,
                       static_cast<int>(box.height), static_cast<int>(box.width), image.channels, image.stride};
  return {crop, CropBox{0, 0, box.height, box.width}};
}

DecodedRegion decode_sample(const SampleBytes& bytes, const DecodeRequest& request, std::vector<uint8_t>& buffer) {
  switch (bytes.format) {
    case SampleFormat::raw:
      return crop_raw(ImageView{bytes.data, bytes.height, bytes.width, bytes.channels,
                                static_cast<int64_t>(bytes.width) * bytes.channels},
                      request);
    case SampleFormat::jpeg:
      return decode_jpeg(bytes.data, bytes.size, request, buffer);
    case SampleFormat::png:
      return decode_png(bytes.data, bytes.size, request, buffer);
  }
  DDPX_INTERNAL_FAIL("sample format {} has no decoder", static_cast<int>(bytes.format));
}

DecodedRegion decode_jpeg(const uint8_t* data, size_t size, const DecodeRequest& request, std::vector<uint8_t>& buffer) {
  jpeg_decompress_struct info;
  JpegErrors errors;
  info.err = jpeg_std_error(&errors.manager);
  errors.manager.error_exit = jpeg_error_exit;
  errors.manager.emit_message = jpeg_emit_message;
  // Values the jump needs, kept outside the setjmp region's automatic C++ objects.
  int height = 0, width = 0, channels = 0, denom = 1;
  bool cmyk = false, inverted = false;
  CropBox box;
  const char* volatile stage = "header";  // read after the jump
  if (setjmp(errors.jump)) {
    jpeg_destroy_decompress(&info);
    fail_decode(request, "JPEG", std::string(errors.message) + " while reading its " + stage);
  }
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, data, static_cast<unsigned long>(size));
  jpeg_read_header(&info, TRUE);
  // The limit and the crop are decided from the header; std::function calls may throw, so they run with the
  // decompressor destroyed on the way out.
  try {
    check_pixel_limit(info.image_height, info.image_width, request);
    box = request.choose_box(static_cast<int>(info.image_height), static_cast<int>(info.image_width));
  } catch (...) {
    jpeg_destroy_decompress(&info);
    throw;
  }
  cmyk = info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK;
  inverted = cmyk && info.saw_Adobe_marker;
  info.out_color_space = cmyk ? JCS_CMYK : (info.num_components == 1 ? JCS_GRAYSCALE : JCS_RGB);
  denom = request.dct_scaling ? dct_denominator(box, request.out_size) : 1;
  info.scale_num = 1;
  info.scale_denom = static_cast<unsigned>(denom);
  stage = "pixels";
  jpeg_start_decompress(&info);
  channels = static_cast<int>(info.output_components);
  // The crop in the scaled image's coordinates.
  // Scaled pixel i is the IDCT of source pixels [i * denom, (i + 1) * denom): the scale is exactly 1 / denom. The
  // output size is rounded up (a partial last block), so output / image size is not the scale: with it a 741-wide
  // image at 1/4 (186 columns) drew pixels from up to 0.7 scaled columns (2.8 source columns) off near its right edge.
  const double scale = 1.0 / denom;
  CropBox scaled{box.top * scale, box.left * scale, box.height * scale, box.width * scale};
  // The rows and columns the resampler may read: the crop's (rounded outward when scaled) for RandomResizedCrop,
  // else all of them.
  int rows_begin = 0, rows_end = static_cast<int>(info.output_height);
  int decode_begin = 0, decode_end = rows_end;  // the rows decoded: the crop's and a margin
  int cols_begin = 0, cols_end = static_cast<int>(info.output_width);
  JDIMENSION x_offset = 0, x_width = info.output_width;
  if (request.box_bounds_sampling) {
    rows_begin = std::clamp(static_cast<int>(std::floor(scaled.top)), 0, static_cast<int>(info.output_height) - 1);
    rows_end = std::clamp(static_cast<int>(std::ceil(scaled.top + scaled.height)), rows_begin + 1,
                          static_cast<int>(info.output_height));
    cols_begin = std::clamp(static_cast<int>(std::floor(scaled.left)), 0, static_cast<int>(info.output_width) - 1);
    cols_end = std::clamp(static_cast<int>(std::ceil(scaled.left + scaled.width)), cols_begin + 1,
                          static_cast<int>(info.output_width));
    // Decoded with a margin of 16 pixels (an iMCU at most) around the crop: chroma upsampling near a decoded
    // region's edge would otherwise see no neighbours there, and differ from a full decode by a level or two.
    const int margin = 16;
    x_offset = static_cast<JDIMENSION>(std::max(cols_begin - margin, 0));
    x_width = static_cast<JDIMENSION>(std::min(cols_end + margin, static_cast<int>(info.output_width))) - x_offset;
    if (x_width < info.output_width) jpeg_crop_scanline(&info, &x_offset, &x_width);  // widens to iMCU columns
    decode_begin = std::max(rows_begin - margin, 0);
    decode_end = std::min(rows_end + margin, static_cast<int>(info.output_height));
  }
  const int region_left = static_cast<int>(x_offset);  // the decoded columns start here (iMCU-aligned)
  width = static_cast<int>(info.output_width);  // after jpeg_crop_scanline: the decoded width
  height = decode_end - decode_begin;
  const size_t row_bytes = static_cast<size_t>(width) * static_cast<size_t>(channels);
  buffer.resize(row_bytes * static_cast<size_t>(height));
  if (decode_begin > 0) jpeg_skip_scanlines(&info, static_cast<JDIMENSION>(decode_begin));
  for (int y = 0; y < height;) {
    JSAMPROW row = buffer.data() + static_cast<size_t>(y) * row_bytes;
    y += static_cast<int>(jpeg_read_scanlines(&info, &row, 1));
    if (errors.truncated) break;
  }
  jpeg_abort_decompress(&info);
  jpeg_destroy_decompress(&info);
  if (errors.truncated) fail_decode(request, "JPEG", "the data ends early: the file is truncated");
  if (cmyk) {
    // CMYK (Adobe's inverted form when it says so) to RGB as PIL: R = (255 - C)(255 - K) / 255.
    const size_t pixels = static_cast<size_t>(width) * static_cast<size_t>(height);
    for (size_t p = 0; p < pixels; ++p) {
      const uint8_t* in = buffer.data() + 4 * p;
      int c = in[0], m = in[1], yy = in[2], k = in[3];
      if (inverted) c = 255 - c, m = 255 - m, yy = 255 - yy, k = 255 - k;
      const int nk = 255 - k;
      uint8_t* out = buffer.data() + 3 * p;
      out[0] = static_cast<uint8_t>(std::clamp(nk - muldiv255(c, nk), 0, 255));
      out[1] = static_cast<uint8_t>(std::clamp(nk - muldiv255(m, nk), 0, 255));
      out[2] = static_cast<uint8_t>(std::clamp(nk - muldiv255(yy, nk), 0, 255));
    }
    channels = 3;
  }
  // The view starts at the crop's first column, not the iMCU boundary before it: taps never read outside the crop.
  const int64_t stride = static_cast<int64_t>(width) * channels;
  const ImageView view{buffer.data() + (rows_begin - decode_begin) * stride +
                           static_cast<size_t>(cols_begin - region_left) * static_cast<size_t>(channels),
                       rows_end - rows_begin, cols_end - cols_begin, channels, stride};
  return {view, CropBox{scaled.top - rows_begin, scaled.left - cols_begin, scaled.height, scaled.width}};
}

DecodedRegion decode_png(const uint8_t* data, size_t size, const DecodeRequest& request, std::vector<uint8_t>& buffer) {
  std::unique_ptr<spng_ctx, void (*)(spng_ctx*)> ctx(spng_ctx_new(0), spng_ctx_free);
  DDPX_REQUIRE(ctx != nullptr, "{}: libspng could not allocate a decoder", request.name());
  spng_set_crc_action(ctx.get(), SPNG_CRC_ERROR, SPNG_CRC_ERROR);
  // Ancillary chunks (iCCP, zTXt, ...) are inflated into libspng's chunk cache, unbounded by default: a 2 MB PNG
  // whose iCCP inflates to 2 GiB took 1.2 GB and 12 s per loader thread before it failed (issue 48). libspng wants
  // the chunk size limit (which also bounds an IDAT chunk, which some encoders write as one) at most the cache
  // limit: 128 MiB each holds any real colour profile and the IDAT of any image within --max-pixels' default.
  const int limits = spng_set_chunk_limits(ctx.get(), size_t{128} << 20, size_t{128} << 20);
  DDPX_INTERNAL_ASSERT(limits == 0, "spng_set_chunk_limits: {}", spng_strerror(limits));
  spng_set_png_buffer(ctx.get(), data, size);
  spng_ihdr header{};
  if (const int e = spng_get_ihdr(ctx.get(), &header)) fail_decode(request, "PNG", spng_strerror(e));
  check_pixel_limit(header.height, header.width, request);
  const bool gray = header.color_type == SPNG_COLOR_TYPE_GRAYSCALE && header.bit_depth <= 8;
  const int format = gray ? SPNG_FMT_G8 : SPNG_FMT_RGB8;
  size_t bytes = 0;
  if (const int e = spng_decoded_image_size(ctx.get(), format, &bytes)) fail_decode(request, "PNG", spng_strerror(e));
  buffer.resize(bytes);
  if (const int e = spng_decode_image(ctx.get(), buffer.data(), bytes, format, 0))
    fail_decode(request, "PNG", spng_strerror(e));
  const int channels = gray ? 1 : 3;
  const ImageView image{buffer.data(), static_cast<int>(header.height), static_cast<int>(header.width), channels,
                        static_cast<int64_t>(header.width) * channels};
  DecodeRequest unlimited = request;
  unlimited.max_pixels = INT64_MAX;  // checked above
  return crop_raw(image, unlimited);
}

}  // namespace ddpx
