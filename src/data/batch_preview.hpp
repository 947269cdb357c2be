// A batch as the model sees it, for a person to look at (`ddpx data-preview`): the uint8 images after the train or
// eval transform laid out in a grid, each tile captioned with its class index, written as a PNG.
// Guarantees:
//  - preview_grid() copies every image's pixels unchanged (gray repeated into R, G and B) into tile
//    (i / columns, i % columns), tiles `kPreviewGap` pixels apart on a dark background, the image's class index
//    drawn in white digits (a 3x5 pixel font, doubled) in the caption strip under its tile; nothing else is drawn.
//  - encode_png() is an 8-bit RGB PNG through libspng; a failure is a ddpx::Error naming what was written.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ddpx {

inline constexpr int kPreviewGap = 4;             // pixels between tiles and around the grid
inline constexpr int kPreviewCaptionHeight = 14;  // the strip under each tile holding its class index

struct PreviewGrid {
  int height = 0, width = 0;
  int columns = 1, size = 0;  // tiles per row, the tiles' side
  std::vector<uint8_t> rgb;   // HWC, 3 channels
  // Where tile i's image starts (its top-left pixel) in the grid.
  int tile_top(int64_t i) const {
    return kPreviewGap + static_cast<int>(i / columns) * (size + kPreviewCaptionHeight + kPreviewGap);
  }
  int tile_left(int64_t i) const { return kPreviewGap + static_cast<int>(i % columns) * (size + kPreviewGap); }
};

// images: [count, size, size, channels] uint8 (channels 1 or 3); labels: count class indices (>= 0).
PreviewGrid preview_grid(const uint8_t* images, int64_t count, int size, int channels, const int32_t* labels,
                         int columns);

std::vector<uint8_t> encode_png(const PreviewGrid& grid);

}  // namespace ddpx
