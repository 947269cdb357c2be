// The packed-file format of `ddpx pack` (--data pack:FILE), version 1: the layout as constants and the trailer's
// reading and writing. docs/pack-format.md describes the same layout for other tools.
//
// Layout (all integers little-endian):
//   [0, 16)            preamble: "DDPXPACK", u32 version (1), u32 zero
//   [16, index)        records, back to back, each starting at a multiple of 16 (zero padding between):
//                      raw: height x width x channels uint8 (HWC); jpeg: a JPEG file
//   [index, +32 N)     the index: one 32-byte entry per record (PackEntry)
//   [classes, +size)   class names, UTF-8, each followed by '\n' (empty when the source had no names)
//   [end - 128, end)   the trailer (PackTrailer): counts, offsets, storage, CRC-32s of the index, of the classes
//                      and of the trailer itself
// The trailer is written last, so a file cut short by a crash has none and is refused.
#pragma once
#include <cstdint>
#include <string>

namespace ddpx {

inline constexpr char kPackMagic[8] = {'D', 'D', 'P', 'X', 'P', 'A', 'C', 'K'};
inline constexpr char kPackTrailerMagic[8] = {'D', 'D', 'P', 'X', 'T', 'A', 'I', 'L'};
inline constexpr uint32_t kPackVersion = 1;
inline constexpr uint64_t kPackPreambleBytes = 16;
inline constexpr uint64_t kPackEntryBytes = 32;
inline constexpr uint64_t kPackTrailerBytes = 128;
inline constexpr uint64_t kPackRecordAlignment = 16;

enum class PackStorage : uint32_t { raw = 0, jpeg = 1 };

struct PackEntry {          // 32 bytes on disk:
  uint64_t offset = 0;      //  0 u64: the record's first byte, from the file's start
  uint32_t size = 0;        //  8 u32: its bytes
  uint32_t label = 0;       // 12 u32
  uint16_t height = 0;      // 16 u16
  uint16_t width = 0;       // 18 u16
  uint8_t channels = 0;     // 20 u8: 1 or 3; 21..23 zero
  uint32_t crc32 = 0;       // 24 u32: CRC-32 (zlib's) of the record's bytes; 28..31 zero
};

struct PackTrailer {             // 128 bytes on disk:
  uint32_t version = kPackVersion;  //  0 "DDPXTAIL", 8 u32 version
  PackStorage storage = PackStorage::raw;  // 12 u32
  uint64_t records = 0;          // 16 u64
  uint64_t index_offset = 0;     // 24 u64
  uint64_t classes_offset = 0;   // 32 u64
  uint64_t classes_size = 0;     // 40 u64
  uint32_t class_count = 0;      // 48 u32: labels are below it
  uint32_t max_side = 0;         // 52 u32: the longer side's limit used (0: none)
  uint32_t jpeg_quality = 0;     // 56 u32 (0 for raw)
  uint32_t index_crc32 = 0;      // 60 u32
  uint32_t classes_crc32 = 0;    // 64 u32
  uint32_t flags = 0;            // 68 u32: kPackPhotographs; 72..123 zero; 124 u32: CRC-32 of bytes 0..123
};
// Flag: the images are photographs (a folder's, shards'), so training crops and flips them by default; without it
// (idx) they are resized (--augment auto).
inline constexpr uint32_t kPackPhotographs = 1;

void encode_pack_entry(const PackEntry& entry, uint8_t* out);  // 32 bytes
PackEntry decode_pack_entry(const uint8_t* in);
void encode_pack_trailer(const PackTrailer& trailer, uint8_t* out);  // 128 bytes, its CRC included
// Throws naming `what` (the pack as the user gave it: "--val pack:FILE", "ddpx pack SOURCE pack:FILE") when the
// magic, the version or the CRC is wrong.
PackTrailer decode_pack_trailer(const uint8_t* in, const std::string& what);

}  // namespace ddpx
