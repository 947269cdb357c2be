// Byte layout of the pack's entries and trailer; see pack_format.hpp.
#include "data/pack_format.hpp"

#include <zlib.h>

#include <cstring>

#include "core/error.hpp"

namespace ddpx {
namespace {

template <typename T>
void put(uint8_t* out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) out[i] = static_cast<uint8_t>(static_cast<uint64_t>(value) >> (8 * i));
}

template <typename T>
T get(const uint8_t* in) {
  uint64_t value = 0;
  for (size_t i = 0; i < sizeof(T); ++i) value |= static_cast<uint64_t>(in[i]) << (8 * i);
  return static_cast<T>(value);
}

}  // namespace

void encode_pack_entry(const PackEntry& entry, uint8_t* out) {
  std::memset(out, 0, kPackEntryBytes);
  put<uint64_t>(out, entry.offset);
  put<uint32_t>(out + 8, entry.size);
  put<uint32_t>(out + 12, entry.label);
  put<uint16_t>(out + 16, entry.height);
  put<uint16_t>(out + 18, entry.width);
  out[20] = entry.channels;
  put<uint32_t>(out + 24, entry.crc32);
}

PackEntry decode_pack_entry(const uint8_t* in) {
  PackEntry entry;
  entry.offset = get<uint64_t>(in);
  entry.size = get<uint32_t>(in + 8);
  entry.label = get<uint32_t>(in + 12);
  entry.height = get<uint16_t>(in + 16);
  entry.width = get<uint16_t>(in + 18);
  entry.channels = in[20];
  entry.crc32 = get<uint32_t>(in + 24);
  return entry;
}

void encode_pack_trailer(const PackTrailer& t, uint8_t* out) {
  std::memset(out, 0, kPackTrailerBytes);
  std::memcpy(out, kPackTrailerMagic, 8);
  put<uint32_t>(out + 8, t.version);
  put<uint32_t>(out + 12, static_cast<uint32_t>(t.storage));
  put<uint64_t>(out + 16, t.records);
  put<uint64_t>(out + 24, t.index_offset);
  put<uint64_t>(out + 32, t.classes_offset);
  put<uint64_t>(out + 40, t.classes_size);
  put<uint32_t>(out + 48, t.class_count);
  put<uint32_t>(out + 52, t.max_side);
  put<uint32_t>(out + 56, t.jpeg_quality);
  put<uint32_t>(out + 60, t.index_crc32);
  put<uint32_t>(out + 64, t.classes_crc32);
  put<uint32_t>(out + 68, t.flags);
  put<uint32_t>(out + 124, static_cast<uint32_t>(crc32(0, out, 124)));
}

PackTrailer decode_pack_trailer(const uint8_t* in, const std::string& what) {
  DDPX_REQUIRE(std::memcmp(in, kPackTrailerMagic, 8) == 0,
               "{}: no pack trailer at the file's end (the file is cut short, e.g. `ddpx pack` did not "
               "finish, or it is not a ddpx pack); run `ddpx pack` again", what);
  PackTrailer t;
  t.version = get<uint32_t>(in + 8);
  DDPX_REQUIRE(t.version == kPackVersion,
               "{}: format version {}, this ddpx reads version {}; repack the source with this ddpx's "
               "`ddpx pack`", what, t.version, kPackVersion);
  DDPX_REQUIRE(get<uint32_t>(in + 124) == static_cast<uint32_t>(crc32(0, in, 124)),
               "{}: the trailer's checksum does not match (the file is damaged); repack it", what);
  const uint32_t storage = get<uint32_t>(in + 12);
  DDPX_REQUIRE(storage <= 1, "{}: unknown storage {}; repack it", what, storage);
  t.storage = static_cast<PackStorage>(storage);
  t.records = get<uint64_t>(in + 16);
  t.index_offset = get<uint64_t>(in + 24);
  t.classes_offset = get<uint64_t>(in + 32);
  t.classes_size = get<uint64_t>(in + 40);
  t.class_count = get<uint32_t>(in + 48);
  t.max_side = get<uint32_t>(in + 52);
  t.jpeg_quality = get<uint32_t>(in + 56);
  t.index_crc32 = get<uint32_t>(in + 60);
  t.classes_crc32 = get<uint32_t>(in + 64);
  t.flags = get<uint32_t>(in + 68);
  return t;
}

}  // namespace ddpx
