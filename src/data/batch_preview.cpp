// The preview grid and its PNG; see batch_preview.hpp.
#include "data/batch_preview.hpp"

#include <spng.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>

#include "core/error.hpp"
#include "core/internal_assert.hpp"

namespace ddpx {
namespace {

// Digits 0-9 in a 3x5 font: one row per entry, the top 3 bits of each row's value are its pixels, left first.
constexpr uint8_t kDigits[10][5] = {
    {7, 5, 5, 5, 7}, {2, 6, 2, 2, 7}, {7, 1, 7, 4, 7}, {7, 1, 7, 1, 7}, {5, 5, 7, 1, 1},
    {7, 4, 7, 1, 7}, {7, 4, 7, 5, 7}, {7, 1, 1, 1, 1}, {7, 5, 7, 5, 7}, {7, 5, 7, 1, 7},
};
constexpr int kScale = 2, kBackground = 40;

void draw_number(PreviewGrid& grid, int top, int left, int64_t value) {
  const std::string digits = std::to_string(value);
  for (size_t d = 0; d < digits.size(); ++d) {
    const uint8_t* glyph = kDigits[digits[d] - '0'];
    const int glyph_left = left + static_cast<int>(d) * 4 * kScale;
    for (int row = 0; row < 5 * kScale; ++row)
      for (int col = 0; col < 3 * kScale; ++col) {
        if (!((glyph[row / kScale] >> (2 - col / kScale)) & 1)) continue;
        const int y = top + row, x = glyph_left + col;
        if (y < 0 || y >= grid.height || x < 0 || x >= grid.width) continue;  // a number wider than its tile
        uint8_t* pixel = grid.rgb.data() + (static_cast<size_t>(y) * grid.width + x) * 3;
        pixel[0] = pixel[1] = pixel[2] = 255;
      }
  }
}

}  // namespace

PreviewGrid preview_grid(const uint8_t* images, int64_t count, int size, int channels, const int32_t* labels,
                         int columns) {
  DDPX_INTERNAL_ASSERT(count > 0 && size > 0 && columns > 0 && (channels == 1 || channels == 3),
                       "preview grid of {} images of {} px, {} channels, {} columns", count, size, channels, columns);
  PreviewGrid grid;
  grid.columns = static_cast<int>(std::min<int64_t>(columns, count));
  grid.size = size;
  const int64_t rows = (count + grid.columns - 1) / grid.columns;
  grid.width = kPreviewGap + grid.columns * (size + kPreviewGap);
  grid.height = kPreviewGap + static_cast<int>(rows) * (size + kPreviewCaptionHeight + kPreviewGap);
  grid.rgb.assign(static_cast<size_t>(grid.height) * grid.width * 3, kBackground);
  for (int64_t i = 0; i < count; ++i) {
    const uint8_t* image = images + i * static_cast<int64_t>(size) * size * channels;
    const int top = grid.tile_top(i), left = grid.tile_left(i);
    for (int y = 0; y < size; ++y)
      for (int x = 0; x < size; ++x) {
        const uint8_t* in = image + (static_cast<int64_t>(y) * size + x) * channels;
        uint8_t* out = grid.rgb.data() + (static_cast<size_t>(top + y) * grid.width + left + x) * 3;
        for (int c = 0; c < 3; ++c) out[c] = in[channels == 3 ? c : 0];
      }
    draw_number(grid, top + size + 2, left + 1, labels[i]);
  }
  return grid;
}

std::vector<uint8_t> encode_png(const PreviewGrid& grid) {
  std::unique_ptr<spng_ctx, void (*)(spng_ctx*)> ctx(spng_ctx_new(SPNG_CTX_ENCODER), spng_ctx_free);
  DDPX_REQUIRE(ctx != nullptr, "PNG encoder: libspng could not allocate an encoder");
  spng_set_option(ctx.get(), SPNG_ENCODE_TO_BUFFER, 1);
  spng_ihdr header{};
  header.width = static_cast<uint32_t>(grid.width);
  header.height = static_cast<uint32_t>(grid.height);
  header.bit_depth = 8;
  header.color_type = SPNG_COLOR_TYPE_TRUECOLOR;
  spng_set_ihdr(ctx.get(), &header);
  int error = spng_encode_image(ctx.get(), grid.rgb.data(), grid.rgb.size(), SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE);
  DDPX_REQUIRE(error == 0, "PNG encoder: {} x {} image: {}", grid.width, grid.height, spng_strerror(error));
  size_t size = 0;
  void* png = spng_get_png_buffer(ctx.get(), &size, &error);
  DDPX_REQUIRE(png != nullptr, "PNG encoder: {} x {} image: {}", grid.width, grid.height, spng_strerror(error));
  std::vector<uint8_t> bytes(static_cast<uint8_t*>(png), static_cast<uint8_t*>(png) + size);
  std::free(png);
  return bytes;
}

}  // namespace ddpx
