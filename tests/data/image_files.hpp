// Test helpers that write real image files: JPEG through libjpeg-turbo's compressor (baseline or progressive,
// gray, RGB or CMYK) and PNG through libspng's encoder; and the photographs they start from.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ddpx::testing {

struct Pixels {
  std::vector<uint8_t> data;  // HWC
  int height = 0, width = 0, channels = 0;
};

enum class JpegKind { baseline, progressive, gray, cmyk };

std::vector<uint8_t> encode_jpeg(const Pixels& image, int quality, JpegKind kind);
std::vector<uint8_t> encode_png(const Pixels& image);
void write_file(const std::string& path, const std::vector<uint8_t>& bytes);
std::vector<uint8_t> read_file(const std::string& path);

// A tar archive (ustar headers) of (name, bytes) members, as WebDataset's writers make.
std::vector<uint8_t> make_tar(const std::vector<std::pair<std::string, std::vector<uint8_t>>>& members);

// A photograph from scikit-image's data (Debian python3-skimage), decoded; empty when it is not installed.
Pixels skimage_photograph(const std::string& name);
// An area-average resize, to make the same photograph at several sizes.
Pixels shrink(const Pixels& image, int height, int width);

}  // namespace ddpx::testing
