// `ddpx pack`: writes any image source (folder, idx, wds, another pack) as a pack file (data/pack_format.hpp).
// Guarantees:
//  - Records keep the source's order and labels; each image is decoded whole (gray stays 1 channel, everything
//    else RGB) and, when its longer side exceeds max_side, resized (antialiased bilinear) so the longer side is
//    max_side and the other round(side x max_side / longer); then stored raw (HWC uint8) or re-encoded as JPEG at
//    the given quality.
//  - The file is written under io/output_file's policy (a temporary renamed over OUT when complete): an
//    interrupted pack leaves no file that reads as a pack.
//  - `threads` decode in parallel; the output does not depend on their number.
//  - OUT is never one of the source's inputs (SampleSource::inputs(): its files, and every folder of a folder:
//    source as a whole tree), checked through io/same_file before anything is read or written.
#pragma once
#include <cstdint>
#include <string>

#include "data/pack_format.hpp"
#include "data/sample_source.hpp"

namespace ddpx {

struct PackOptions {
  PackStorage storage = PackStorage::jpeg;
  int jpeg_quality = 90;
  int max_side = 0;  // 0: keep sizes
  int threads = 1;
  int64_t max_pixels = 178956970;
};

struct PackSummary {
  int64_t records = 0;
  uint64_t bytes = 0;
};

PackSummary write_pack(const SampleSource& source, const std::string& out, const PackOptions& options);

// "jpeg:90" | "raw" (--store); errors name the flag.
void parse_pack_store(const std::string& text, PackOptions& options);

}  // namespace ddpx
