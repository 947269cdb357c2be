// Writers for the data tests' image files; see image_files.hpp.
#include "image_files.hpp"

#include <spng.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include <jpeglib.h>

#include "data/image_decode.hpp"

namespace ddpx::testing {

std::vector<uint8_t> encode_jpeg(const Pixels& image, int quality, JpegKind kind) {
  jpeg_compress_struct info;
  jpeg_error_mgr errors;
  info.err = jpeg_std_error(&errors);
  jpeg_create_compress(&info);
  unsigned char* out = nullptr;
  unsigned long out_size = 0;
  jpeg_mem_dest(&info, &out, &out_size);
  info.image_width = static_cast<JDIMENSION>(image.width);
  info.image_height = static_cast<JDIMENSION>(image.height);
  std::vector<uint8_t> rows = image.data;
  int channels = image.channels;
  if (kind == JpegKind::gray && channels == 3) {
    rows.clear();
    for (size_t p = 0; p < image.data.size() / 3; ++p)
      rows.push_back(static_cast<uint8_t>((image.data[3 * p] * 19595 + image.data[3 * p + 1] * 38470 +
                                           image.data[3 * p + 2] * 7471 + 0x8000) >> 16));
    channels = 1;
  }
  if (kind == JpegKind::cmyk) {
    // PIL's RGB -> CMYK (C = 255 - R, ..., K = 0), stored inverted with an Adobe marker as PIL and Photoshop do.
    rows.clear();
    for (size_t p = 0; p < image.data.size() / 3; ++p) {
      for (int c = 0; c < 3; ++c) rows.push_back(image.data[3 * p + static_cast<size_t>(c)]);  // inverted C,M,Y
      rows.push_back(255);                                                                     // inverted K = 0
    }
    channels = 4;
  }
  info.input_components = channels;
  info.in_color_space = channels == 1 ? JCS_GRAYSCALE : channels == 4 ? JCS_CMYK : JCS_RGB;
  jpeg_set_defaults(&info);
  if (kind == JpegKind::cmyk) {
    jpeg_set_colorspace(&info, JCS_CMYK);
    info.write_Adobe_marker = TRUE;
  }
  jpeg_set_quality(&info, quality, TRUE);
  if (kind == JpegKind::progressive) jpeg_simple_progression(&info);
  jpeg_start_compress(&info, TRUE);
  while (info.next_scanline < info.image_height) {
    JSAMPROW row = rows.data() + static_cast<size_t>(info.next_scanline) * static_cast<size_t>(image.width * channels);
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
  std::vector<uint8_t> bytes(out, out + out_size);
  std::free(out);
  return bytes;
}

std::vector<uint8_t> encode_png(const Pixels& image) {
  spng_ctx* ctx = spng_ctx_new(SPNG_CTX_ENCODER);
  spng_set_option(ctx, SPNG_ENCODE_TO_BUFFER, 1);
  spng_ihdr header{};
  header.width = static_cast<uint32_t>(image.width);
  header.height = static_cast<uint32_t>(image.height);
  header.bit_depth = 8;
  header.color_type = image.channels == 1 ? SPNG_COLOR_TYPE_GRAYSCALE : SPNG_COLOR_TYPE_TRUECOLOR;
  spng_set_ihdr(ctx, &header);
  int error = spng_encode_image(ctx, image.data.data(), image.data.size(), SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE);
  size_t size = 0;
  void* png = spng_get_png_buffer(ctx, &size, &error);
  spng_ctx_free(ctx);
  if (png == nullptr) throw std::runtime_error(std::string("spng encode: ") + spng_strerror(error));
  std::vector<uint8_t> bytes(static_cast<uint8_t*>(png), static_cast<uint8_t*>(png) + size);
  std::free(png);
  return bytes;
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<uint8_t> make_tar(const std::vector<std::pair<std::string, std::vector<uint8_t>>>& members) {
  std::vector<uint8_t> tar;
  for (const auto& [name, bytes] : members) {
    char header[512] = {};
    std::snprintf(header, 100, "%s", name.c_str());
    std::snprintf(header + 100, 8, "%07o", 0644);
    std::snprintf(header + 108, 8, "%07o", 0);
    std::snprintf(header + 116, 8, "%07o", 0);
    std::snprintf(header + 124, 12, "%011lo", static_cast<unsigned long>(bytes.size()));
    std::snprintf(header + 136, 12, "%011o", 0);
    header[156] = '0';
    std::memcpy(header + 257, "ustar\0" "00", 8);
    std::memset(header + 148, ' ', 8);
    unsigned sum = 0;
    for (unsigned char c : header) sum += c;
    std::snprintf(header + 148, 8, "%06o", sum);
    tar.insert(tar.end(), header, header + 512);
    tar.insert(tar.end(), bytes.begin(), bytes.end());
    tar.resize((tar.size() + 511) / 512 * 512, 0);
  }
  tar.resize(tar.size() + 1024, 0);
  return tar;
}

Pixels skimage_photograph(const std::string& name) {
  const std::string path = "/usr/lib/python3/dist-packages/skimage/data/" + name;
  if (!std::filesystem::exists(path)) return {};
  const std::vector<uint8_t> bytes = read_file(path);
  std::vector<uint8_t> buffer;
  DecodeRequest request;
  request.choose_box = [](int h, int w) { return CropBox{0, 0, double(h), double(w)}; };
  request.box_bounds_sampling = true;
  request.dct_scaling = false;
  request.max_pixels = int64_t{1} << 40;
  request.name = [&] { return path; };
  const DecodedRegion region = decode_png(bytes.data(), bytes.size(), request, buffer);
  Pixels out{{}, region.view.height, region.view.width, region.view.channels};
  for (int y = 0; y < out.height; ++y)
    out.data.insert(out.data.end(), region.view.pixels + y * region.view.stride,
                    region.view.pixels + y * region.view.stride + out.width * out.channels);
  return out;
}

Pixels shrink(const Pixels& image, int height, int width) {
  Pixels out{std::vector<uint8_t>(static_cast<size_t>(height * width * image.channels)), height, width, image.channels};
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < image.channels; ++c) {
        const int y0 = y * image.height / height, y1 = std::max(y0 + 1, (y + 1) * image.height / height);
        const int x0 = x * image.width / width, x1 = std::max(x0 + 1, (x + 1) * image.width / width);
        int sum = 0;
        for (int yy = y0; yy < y1; ++yy)
          for (int xx = x0; xx < x1; ++xx) sum += image.data[static_cast<size_t>((yy * image.width + xx) * image.channels + c)];
        out.data[static_cast<size_t>((y * width + x) * image.channels + c)] =
            static_cast<uint8_t>(sum / ((y1 - y0) * (x1 - x0)));
      }
  return out;
}

}  // namespace ddpx::testing
