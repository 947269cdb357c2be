// Packs read with pread; see pack_source.hpp.
#include "data/pack_source.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "core/byte_range.hpp"
#include "core/error.hpp"
#include "core/fnv1a.hpp"

namespace ddpx {

PackSource::PackSource(const std::string& path, DataOrigin origin)
    : path_(path), origin_(origin), file_(path, fmt::format("{} pack:{}", origin_flag(origin), path)) {
  const std::string_view flag = origin_flag(origin);
  const uint64_t file_size = file_.size();
  DDPX_REQUIRE(file_size >= kPackPreambleBytes + kPackTrailerBytes,
               "{} pack:{}: {} bytes, too short to be a pack (cut short?); run `ddpx pack` again", flag, path, file_size);
  uint8_t preamble[kPackPreambleBytes];
  file_.read_at(0, preamble, sizeof(preamble));
  DDPX_REQUIRE(std::memcmp(preamble, kPackMagic, 8) == 0,
               "{} pack:{}: not a ddpx pack (no DDPXPACK magic); make one with `ddpx pack SOURCE {}`", flag, path, path);
  uint32_t version = 0;
  for (int i = 0; i < 4; ++i) version |= uint32_t{preamble[8 + i]} << (8 * i);
  DDPX_REQUIRE(version == kPackVersion,
               "{} pack:{}: format version {}, this ddpx reads version {}; repack the source with this ddpx's "
               "`ddpx pack`", flag, path, version, kPackVersion);
  uint8_t tail[kPackTrailerBytes];
  const uint64_t end = file_size - kPackTrailerBytes;
  file_.read_at(end, tail, sizeof(tail));
  trailer_ = decode_pack_trailer(tail, fmt::format("{} pack:{}", flag, path));
  trailer_hash_ = fnv1a(tail, sizeof(tail));
  // Every offset and size from the trailer, checked so that no sum can wrap (core/byte_range.hpp): the index lies
  // in [16, classes_offset) and the class names end exactly where the trailer starts.
  const std::optional<uint64_t> index_bytes = checked_mul(trailer_.records, kPackEntryBytes);
  DDPX_REQUIRE(trailer_.records > 0 && index_bytes &&
                   range_between(trailer_.index_offset, *index_bytes, kPackPreambleBytes, end) &&
                   range_between(trailer_.classes_offset, trailer_.classes_size,
                                 trailer_.index_offset + *index_bytes, end) &&
                   trailer_.classes_size == end - trailer_.classes_offset,
               "{} pack:{}: the trailer's offsets do not fit the file's {} bytes ({} records, index at {}, class "
               "names at {} of {} bytes; damaged or crafted); repack it", flag, path, file_size, trailer_.records,
               trailer_.index_offset, trailer_.classes_offset, trailer_.classes_size);
  std::vector<uint8_t> index(static_cast<size_t>(*index_bytes));
  file_.read_at(trailer_.index_offset, index.data(), index.size());
  DDPX_REQUIRE(crc32_z(0, index.data(), index.size()) == trailer_.index_crc32,
               "{} pack:{}: the index's checksum does not match (damaged); repack it", flag, path);
  std::string classes(static_cast<size_t>(trailer_.classes_size), '\0');
  file_.read_at(trailer_.classes_offset, classes.data(), classes.size());
  DDPX_REQUIRE(crc32_z(0, reinterpret_cast<const uint8_t*>(classes.data()), classes.size()) == trailer_.classes_crc32,
               "{} pack:{}: the class names' checksum does not match (damaged); repack it", flag, path);
  DDPX_REQUIRE(classes.empty() || classes.back() == '\n',
               "{} pack:{}: the class names do not end with a newline (damaged); repack it", flag, path);
  std::string name;
  for (const char c : classes) {
    if (c == '\n') {
      DDPX_REQUIRE(!name.empty(), "{} pack:{}: class name {} is empty (damaged); repack it", flag, path,
                   classes_.size());
      classes_.push_back(name);
      name.clear();
    } else {
      name.push_back(c);
    }
  }
  DDPX_REQUIRE(classes_.empty() || classes_.size() == trailer_.class_count,
               "{} pack:{}: {} class names for {} classes (damaged); repack it", flag, path, classes_.size(),
               trailer_.class_count);
  photographs_ = (trailer_.flags & kPackPhotographs) != 0;
  entries_.reserve(static_cast<size_t>(trailer_.records));
  uint32_t max_label = 0;
  for (uint64_t i = 0; i < trailer_.records; ++i) {
    const PackEntry e = decode_pack_entry(index.data() + i * kPackEntryBytes);
    const bool inside = range_between(e.offset, e.size, kPackPreambleBytes, trailer_.index_offset);
    const bool shape = (e.channels == 1 || e.channels == 3) && e.height > 0 && e.width > 0 &&
                       (trailer_.storage != PackStorage::raw || uint64_t{e.size} == uint64_t{e.height} * e.width * e.channels);
    DDPX_REQUIRE(inside && shape && e.label < trailer_.class_count,
                 "{} pack:{}: index entry {} is inconsistent (offset {}, {} bytes, {}x{}x{}, label {} of {} "
                 "classes; the records lie in [{}, {})); the file is damaged: repack it", flag, path, i, e.offset, e.size,
                 e.height, e.width, e.channels, e.label, trailer_.class_count, kPackPreambleBytes,
                 trailer_.index_offset);
    entries_.push_back(e);
    max_label = std::max(max_label, e.label);
  }
  // Without names, the class count is the largest label + 1, as every unnamed source gives it (`ddpx pack` of idx
  // or of shards without classes.txt): a count of 2^24 for labels 0..3 built a 553M-parameter head (issue 48).
  DDPX_REQUIRE(!classes_.empty() || trailer_.class_count == uint64_t{max_label} + 1,
               "{} pack:{}: the trailer says {} classes but names none and its labels go up to {} (damaged or "
               "crafted); repack it", flag, path, trailer_.class_count, max_label);
}

std::string PackSource::describe() const {
  return fmt::format("pack {} ({} {} images{}, {} classes)", path_, entries_.size(),
                     trailer_.storage == PackStorage::raw ? "raw" : fmt::format("JPEG q{}", trailer_.jpeg_quality),
                     trailer_.max_side > 0 ? fmt::format(", longer side <= {}", trailer_.max_side) : "",
                     trailer_.class_count);
}

std::string PackSource::sample_name(int64_t index) const { return fmt::format("{} record {}", path_, index); }

SampleBytes PackSource::read(int64_t index, std::vector<uint8_t>& scratch) const {
  const PackEntry& e = entries_[static_cast<size_t>(index)];
  scratch.resize(e.size);
  file_.read_at(e.offset, scratch.data(), scratch.size());
  DDPX_REQUIRE(crc32_z(0, scratch.data(), scratch.size()) == e.crc32,
               "{} pack:{}: record {} fails its checksum (the file is damaged on disk, or was rewritten while "
               "this run read it); repack it", origin_flag(origin_), path_, index);
  SampleBytes bytes;
  bytes.format = trailer_.storage == PackStorage::raw ? SampleFormat::raw : SampleFormat::jpeg;
  bytes.data = scratch.data();
  bytes.size = e.size;
  bytes.height = e.height;
  bytes.width = e.width;
  bytes.channels = e.channels;
  return bytes;
}

}  // namespace ddpx
