// libjpeg compression; see jpeg_encode.hpp.
#include "data/jpeg_encode.hpp"

#include <csetjmp>
#include <cstdio>
#include <cstdlib>

// clang-format off
#include <jpeglib.h>
// clang-format on

#include "core/error.hpp"

namespace ddpx {
namespace {

struct EncodeErrors {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void encode_error_exit(j_common_ptr info) {
  auto* errors = reinterpret_cast<EncodeErrors*>(info->err);
  (*info->err->format_message)(info, errors->message);
  std::longjmp(errors->jump, 1);
}

}  // namespace

std::vector<uint8_t> encode_jpeg(const ImageView& image, int quality, const std::string& what) {
  DDPX_REQUIRE(quality >= 1 && quality <= 100, "{}: JPEG quality {} is outside [1, 100]", what, quality);
  DDPX_REQUIRE(image.channels == 1 || image.channels == 3, "{}: {} channels cannot be stored as JPEG", what,
               image.channels);
  jpeg_compress_struct info;
  EncodeErrors errors;
  info.err = jpeg_std_error(&errors.manager);
  errors.manager.error_exit = encode_error_exit;
  unsigned char* out = nullptr;
  unsigned long out_size = 0;
  if (setjmp(errors.jump)) {
    jpeg_destroy_compress(&info);
    std::free(out);
    fail("{}: JPEG encoding failed ({})", what, errors.message);
  }
  jpeg_create_compress(&info);
  jpeg_mem_dest(&info, &out, &out_size);
  info.image_width = static_cast<JDIMENSION>(image.width);
  info.image_height = static_cast<JDIMENSION>(image.height);
  info.input_components = image.channels;
  info.in_color_space = image.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, quality, TRUE);
  jpeg_start_compress(&info, TRUE);
  while (info.next_scanline < info.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(image.pixels + static_cast<int64_t>(info.next_scanline) * image.stride);
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
  std::vector<uint8_t> bytes(out, out + out_size);
  std::free(out);
  return bytes;
}

}  // namespace ddpx
