// Pack writing; see pack_writer.hpp.
#include "data/pack_writer.hpp"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "data/image_decode.hpp"
#include "data/jpeg_encode.hpp"
#include "io/output_file.hpp"
#include "io/same_file.hpp"

namespace ddpx {
namespace {

struct PackedRecord {
  std::vector<uint8_t> bytes;
  PackEntry entry;
};

// Decodes sample `index` whole, shrinks it to max_side, encodes it for storage.
PackedRecord pack_record(const SampleSource& source, int64_t index, const PackOptions& options) {
  std::vector<uint8_t> file, decoded;
  const SampleBytes bytes = source.read(index, file);
  DecodeRequest request;
  request.choose_box = [](int h, int w) { return CropBox{0, 0, static_cast<double>(h), static_cast<double>(w)}; };
  request.box_bounds_sampling = true;
  request.dct_scaling = false;
  request.max_pixels = options.max_pixels;
  request.name = [&] { return source.sample_name(index); };
  const DecodedRegion region = decode_sample(bytes, request, decoded);
  ImageView image = region.view;
  std::vector<uint8_t> resized;
  const int longer = std::max(image.height, image.width);
  if (options.max_side > 0 && longer > options.max_side) {
    const int height = std::max(1, static_cast<int>(std::lround(static_cast<double>(image.height) * options.max_side / longer)));
    const int width = std::max(1, static_cast<int>(std::lround(static_cast<double>(image.width) * options.max_side / longer)));
    resized.resize(static_cast<size_t>(height) * static_cast<size_t>(width) * static_cast<size_t>(image.channels));
    resample(image, CropBox{0, 0, static_cast<double>(image.height), static_cast<double>(image.width)}, height, width,
             false, resized.data());
    image = ImageView{resized.data(), height, width, image.channels, static_cast<int64_t>(width) * image.channels};
  }
  DDPX_REQUIRE(image.height <= 65535 && image.width <= 65535,
               "{}: {} x {} pixels; a pack stores sides up to 65535: give --max-side", source.sample_name(index),
               image.width, image.height);
  PackedRecord record;
  if (options.storage == PackStorage::raw) {
    for (int y = 0; y < image.height; ++y)
      record.bytes.insert(record.bytes.end(), image.pixels + y * image.stride,
                          image.pixels + y * image.stride + static_cast<int64_t>(image.width) * image.channels);
  } else {
    record.bytes = encode_jpeg(image, options.jpeg_quality, source.sample_name(index));
  }
  record.entry.size = static_cast<uint32_t>(record.bytes.size());
  record.entry.label = static_cast<uint32_t>(source.label(index));
  record.entry.height = static_cast<uint16_t>(image.height);
  record.entry.width = static_cast<uint16_t>(image.width);
  record.entry.channels = static_cast<uint8_t>(image.channels);
  record.entry.crc32 = static_cast<uint32_t>(crc32(0, record.bytes.data(), static_cast<uInt>(record.bytes.size())));
  return record;
}

}  // namespace

void parse_pack_store(const std::string& text, PackOptions& options) {
  if (text == "raw") {
    options.storage = PackStorage::raw;
    options.jpeg_quality = 0;
    return;
  }
  if (text.rfind("jpeg:", 0) == 0) {
    const std::string quality = text.substr(5);
    char* end = nullptr;
    const long q = std::strtol(quality.c_str(), &end, 10);
    DDPX_REQUIRE(!quality.empty() && end == quality.c_str() + quality.size() && q >= 1 && q <= 100,
                 "--store {}: the JPEG quality must be a whole number in [1, 100] (e.g. jpeg:90)", text);
    options.storage = PackStorage::jpeg;
    options.jpeg_quality = static_cast<int>(q);
    return;
  }
  fail("--store '{}' is not known; choose raw (uint8 pixels: the fastest to read, the largest) or jpeg:Q (re-encoded "
       "at quality Q, e.g. jpeg:90)", text);
}

PackSummary write_pack(const SampleSource& source, const std::string& out, const PackOptions& options) {
  DDPX_REQUIRE(options.max_side >= 0, "--max-side {}: must be positive (or 0 to keep the sizes)", options.max_side);
  // Never over its own source (issue 48: `ddpx pack pack:j.pack j.pack`, `ddpx pack folder:D D/c0/0.png`, OUT a
  // symlink to an idx file were rewritten in place, exit 0): OUT against every input file and folder tree.
  (void)check_output_path(out, "OUT");
  const std::vector<FileRole> outputs = {{"OUT", out}};
  require_distinct_files(source.inputs(), outputs);
  // One name a line: a name with a newline (a folder may be called so) would read back as two (issue 48 item 8).
  for (const std::string& name : source.class_names())
    DDPX_REQUIRE(!name.empty() && name.find('\n') == std::string::npos,
                 "OUT {}: the class name '{}' is empty or holds a newline, which a pack's one-name-a-line list cannot "
                 "store; rename that class folder", out, name);
  const int threads = std::clamp(options.threads, 1, 256);
  const int64_t count = source.size();
  PackSummary summary;
  write_output_file(out, "OUT", [&](OutputFile& file) {
    uint8_t preamble[kPackPreambleBytes] = {};
    std::copy(kPackMagic, kPackMagic + 8, preamble);
    preamble[8] = static_cast<uint8_t>(kPackVersion);
    file.write(preamble, sizeof(preamble));
    uint64_t offset = kPackPreambleBytes;
    std::vector<uint8_t> index(static_cast<size_t>(count) * kPackEntryBytes);
    const int64_t chunk = 64 * threads;
    for (int64_t first = 0; first < count; first += chunk) {
      const int64_t last = std::min(count, first + chunk);
      std::vector<PackedRecord> records(static_cast<size_t>(last - first));
      std::vector<std::exception_ptr> errors(static_cast<size_t>(threads));
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
          try {
            for (int64_t i = first + t; i < last; i += threads)
              records[static_cast<size_t>(i - first)] = pack_record(source, i, options);
          } catch (...) {
            errors[static_cast<size_t>(t)] = std::current_exception();
          }
        });
      for (std::thread& thread : pool) thread.join();
      for (const std::exception_ptr& error : errors)
        if (error) std::rethrow_exception(error);
      for (size_t r = 0; r < records.size(); ++r) {
        PackedRecord& record = records[r];
        record.entry.offset = offset;
        file.write(record.bytes.data(), record.bytes.size());
        const uint64_t padding = (kPackRecordAlignment - record.bytes.size() % kPackRecordAlignment) % kPackRecordAlignment;
        static const uint8_t zeros[kPackRecordAlignment] = {};
        file.write(zeros, padding);
        offset += record.bytes.size() + padding;
        encode_pack_entry(record.entry, index.data() + (static_cast<size_t>(first) + r) * kPackEntryBytes);
      }
    }
    PackTrailer trailer;
    trailer.storage = options.storage;
    trailer.records = static_cast<uint64_t>(count);
    trailer.index_offset = offset;
    file.write(index.data(), index.size());
    std::string classes;
    for (const std::string& name : source.class_names()) classes += name + "\n";  // checked below, before reading
    trailer.classes_offset = offset + index.size();
    trailer.classes_size = classes.size();
    file.write(classes.data(), classes.size());
    trailer.class_count = static_cast<uint32_t>(source.num_classes());
    trailer.max_side = static_cast<uint32_t>(options.max_side);
    trailer.jpeg_quality = options.storage == PackStorage::jpeg ? static_cast<uint32_t>(options.jpeg_quality) : 0;
    trailer.index_crc32 = static_cast<uint32_t>(crc32(0, index.data(), static_cast<uInt>(index.size())));
    trailer.classes_crc32 = static_cast<uint32_t>(crc32(0, reinterpret_cast<const uint8_t*>(classes.data()),
                                                        static_cast<uInt>(classes.size())));
    trailer.flags = source.photographs() ? kPackPhotographs : 0;
    uint8_t tail[kPackTrailerBytes];
    encode_pack_trailer(trailer, tail);
    file.write(tail, sizeof(tail));
    summary.records = count;
    summary.bytes = trailer.classes_offset + classes.size() + kPackTrailerBytes;
  });
  return summary;
}

}  // namespace ddpx
