// JPEG encoding (libjpeg-turbo's libjpeg API) of 8-bit gray or RGB pixels, for `ddpx pack --store jpeg:Q`.
// Guarantees: baseline, 4:2:0 for RGB (libjpeg's defaults, as PIL's save(quality=Q)), quality in [1, 100];
// a libjpeg failure is an error naming `what`.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/image_transform.hpp"

namespace ddpx {

std::vector<uint8_t> encode_jpeg(const ImageView& image, int quality, const std::string& what);

}  // namespace ddpx
