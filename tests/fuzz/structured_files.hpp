// Structure-aware mutation of the data formats ddpx reads (issue 48: random bit flips never found the pack entry at
// offset 2^64 - 8; hand-made files did): a small valid file of each format, the list of its header fields, the
// boundary values worth trying in each (0, 1, the type's max, 2^63, 2^64 - small, offsets into the header and past
// the end of the file), and an editor that sets a field and then recomputes every checksum the reader would verify
// (a pack's index, class-name and trailer CRC-32s; a tar header's checksum), so the edit reaches the bounds checks.
// Used by the fuzz targets fuzz_pack, fuzz_wds and fuzz_idx (their structured mode: the input is a list of edits)
// and by tests/data/test_structured_files.cpp, which sweeps every field at every boundary value in the normal suite.
// Guarantees: the seeds are valid files the readers accept; an edit changes only the field it names (and the
// checksums); edits_from() turns any bytes into a bounded list of edits (at most kMaxEdits).
#pragma once
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "data/pack_format.hpp"

namespace ddpx::fuzz {

enum class Encoding { little_endian, big_endian, tar_octal };

struct Field {
  std::string name;  // "trailer.index_offset", "entry[2].size", "member[1].size", "images.count"
  uint64_t offset = 0;
  int width = 0;     // bytes
  Encoding encoding = Encoding::little_endian;
};

struct Edit {
  size_t field = 0;
  uint64_t value = 0;
};

inline constexpr size_t kMaxEdits = 8;

// The values worth trying in a field of `width` bytes of a file of `file_size` bytes.
inline std::vector<uint64_t> boundary_values(int width, uint64_t file_size) {
  const uint64_t max = width >= 8 ? std::numeric_limits<uint64_t>::max() : (uint64_t{1} << (8 * width)) - 1;
  std::vector<uint64_t> values = {0, 1, 2, 7, 8, 15, 16, 17, 24, 31, 32, 127, 128, 255, 256, 4096,
                                  file_size - 1, file_size, file_size + 1, file_size - 128, file_size - 129,
                                  max, max - 1, max / 2, max / 2 + 1};
  if (width >= 4) values.insert(values.end(), {uint64_t{1} << 30, (uint64_t{1} << 31) - 1, uint64_t{1} << 31});
  if (width >= 8)
    values.insert(values.end(), {uint64_t{1} << 32, (uint64_t{1} << 32) - 1, uint64_t{1} << 59, uint64_t{1} << 63,
                                 max - 7, max - 15, max - 31, max - 127, max - file_size, max - file_size + 16});
  std::vector<uint64_t> kept;
  for (uint64_t v : values)
    if (v <= max) kept.push_back(v);
  return kept;
}

// Bytes -> edits: each edit is 2 bytes (field index, value choice), a choice past the boundary list taking the
// next 8 bytes as the value itself.
inline std::vector<Edit> edits_from(const uint8_t* data, size_t size, const std::vector<Field>& fields,
                                    uint64_t file_size) {
  std::vector<Edit> edits;
  size_t at = 0;
  while (at + 2 <= size && edits.size() < kMaxEdits && !fields.empty()) {
    Edit edit;
    edit.field = data[at] % fields.size();
    const std::vector<uint64_t> values = boundary_values(fields[edit.field].width, file_size);
    const size_t choice = data[at + 1];
    at += 2;
    if (choice < values.size()) {
      edit.value = values[choice];
    } else {
      for (int i = 0; i < 8 && at < size; ++i, ++at) edit.value |= uint64_t{data[at]} << (8 * i);
    }
    edits.push_back(edit);
  }
  return edits;
}

// One fuzz input as a file, from either kind of mutation: the bytes after the first as they are when the first is
// even (plain mutation), else `seed` with the edits the rest choose applied by `edit(file, fields, edits)` (the
// structure-aware mode, CRCs and checksums recomputed by `edit`). `size` must be at least 1.
template <typename EditFile>
std::vector<uint8_t> raw_or_edited(const uint8_t* data, size_t size, const std::vector<uint8_t>& seed,
                                   const std::vector<Field>& fields, EditFile edit) {
  if (data[0] % 2 == 0) return {data + 1, data + size};
  std::vector<uint8_t> file = seed;
  edit(file, fields, edits_from(data + 1, size - 1, fields, seed.size()));
  return file;
}

inline void put_field(std::vector<uint8_t>& bytes, const Field& field, uint64_t value) {
  uint8_t* at = bytes.data() + field.offset;
  switch (field.encoding) {
    case Encoding::little_endian:
      for (int i = 0; i < field.width; ++i) at[i] = static_cast<uint8_t>(value >> (8 * i));
      break;
    case Encoding::big_endian:
      for (int i = 0; i < field.width; ++i) at[i] = static_cast<uint8_t>(value >> (8 * (field.width - 1 - i)));
      break;
    case Encoding::tar_octal: {  // 11 octal digits and a NUL; larger values in GNU base-256 (first byte 0x80)
      if (value < (uint64_t{1} << 33)) {
        char text[16];
        std::snprintf(text, sizeof(text), "%011llo", static_cast<unsigned long long>(value));
        std::memcpy(at, text, 11);
        at[11] = 0;
      } else {
        std::memset(at, 0, field.width);
        at[0] = 0x80;
        for (int i = 0; i < 8; ++i) at[field.width - 1 - i] = static_cast<uint8_t>(value >> (8 * i));
      }
      break;
    }
  }
}

// ---- packs (docs/pack-format.md) ----

// A raw pack of three 2x4x3 records (24 bytes each, so an offset near 2^64 can wrap offset + size) in two classes.
inline std::vector<uint8_t> seed_pack() {
  std::vector<uint8_t> file(kPackPreambleBytes, 0);
  std::memcpy(file.data(), kPackMagic, 8);
  file[8] = static_cast<uint8_t>(kPackVersion);
  std::vector<uint8_t> index;
  for (uint32_t r = 0; r < 3; ++r) {
    PackEntry entry;
    entry.offset = file.size();
    entry.size = 24;
    entry.label = r % 2;
    entry.height = 2, entry.width = 4, entry.channels = 3;
    std::vector<uint8_t> record(24);
    for (size_t i = 0; i < record.size(); ++i) record[i] = static_cast<uint8_t>(r * 31 + i);
    entry.crc32 = static_cast<uint32_t>(crc32(0, record.data(), static_cast<uInt>(record.size())));
    file.insert(file.end(), record.begin(), record.end());
    file.resize((file.size() + kPackRecordAlignment - 1) / kPackRecordAlignment * kPackRecordAlignment, 0);
    uint8_t encoded[kPackEntryBytes];
    encode_pack_entry(entry, encoded);
    index.insert(index.end(), encoded, encoded + kPackEntryBytes);
  }
  PackTrailer trailer;
  trailer.storage = PackStorage::raw;
  trailer.records = 3;
  trailer.index_offset = file.size();
  file.insert(file.end(), index.begin(), index.end());
  const std::string classes = "cat\ndog\n";
  trailer.classes_offset = file.size();
  trailer.classes_size = classes.size();
  file.insert(file.end(), classes.begin(), classes.end());
  trailer.class_count = 2;
  trailer.index_crc32 = static_cast<uint32_t>(crc32(0, index.data(), static_cast<uInt>(index.size())));
  trailer.classes_crc32 =
      static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(classes.data()), static_cast<uInt>(classes.size())));
  uint8_t tail[kPackTrailerBytes];
  encode_pack_trailer(trailer, tail);
  file.insert(file.end(), tail, tail + kPackTrailerBytes);
  return file;
}

// The trailer's fields and every index entry's, at their places in `pack` (a seed_pack()).
inline std::vector<Field> pack_fields(const std::vector<uint8_t>& pack) {
  const uint64_t trailer = pack.size() - kPackTrailerBytes;
  std::vector<Field> fields = {
      {"preamble.version", 8, 4}, {"trailer.version", trailer + 8, 4}, {"trailer.storage", trailer + 12, 4},
      {"trailer.records", trailer + 16, 8}, {"trailer.index_offset", trailer + 24, 8},
      {"trailer.classes_offset", trailer + 32, 8}, {"trailer.classes_size", trailer + 40, 8},
      {"trailer.class_count", trailer + 48, 4}, {"trailer.max_side", trailer + 52, 4},
      {"trailer.flags", trailer + 68, 4}};
  const PackTrailer t = decode_pack_trailer(pack.data() + trailer, "seed");
  for (uint64_t r = 0; r < t.records; ++r) {
    const uint64_t entry = t.index_offset + r * kPackEntryBytes;
    const std::string name = "entry[" + std::to_string(r) + "].";
    fields.insert(fields.end(), {{name + "offset", entry, 8}, {name + "size", entry + 8, 4},
                                 {name + "label", entry + 12, 4}, {name + "height", entry + 16, 2},
                                 {name + "width", entry + 18, 2}, {name + "channels", entry + 20, 1}});
  }
  return fields;
}

// Sets the fields, then recomputes the CRC-32s of the index and the class names (where the trailer's own offsets
// still point inside the file: a crafted file's writer computes them over what it declares) and the trailer's.
inline void edit_pack(std::vector<uint8_t>& pack, const std::vector<Field>& fields, const std::vector<Edit>& edits) {
  const uint64_t trailer = pack.size() - kPackTrailerBytes;
  const PackTrailer seed = decode_pack_trailer(pack.data() + trailer, "seed");
  for (const Edit& e : edits) put_field(pack, fields[e.field], e.value);
  const auto crc_of = [&](uint64_t offset, uint64_t size) {
    return offset <= trailer && size <= trailer - offset
               ? static_cast<uint32_t>(crc32_z(0, pack.data() + offset, size))
               : static_cast<uint32_t>(crc32_z(0, pack.data() + seed.index_offset, seed.records * kPackEntryBytes));
  };
  uint8_t* tail = pack.data() + trailer;
  uint64_t records = 0, index_offset = 0, classes_offset = 0, classes_size = 0;
  for (int i = 7; i >= 0; --i) {
    records = records << 8 | tail[16 + i];
    index_offset = index_offset << 8 | tail[24 + i];
    classes_offset = classes_offset << 8 | tail[32 + i];
    classes_size = classes_size << 8 | tail[40 + i];
  }
  const uint64_t index_bytes = records <= (uint64_t{1} << 58) ? records * kPackEntryBytes : 0;
  const uint32_t index_crc = crc_of(index_offset, index_bytes), classes_crc = crc_of(classes_offset, classes_size);
  for (int i = 0; i < 4; ++i) {
    tail[60 + i] = static_cast<uint8_t>(index_crc >> (8 * i));
    tail[64 + i] = static_cast<uint8_t>(classes_crc >> (8 * i));
  }
  const uint32_t trailer_crc = static_cast<uint32_t>(crc32(0, tail, 124));
  for (int i = 0; i < 4; ++i) tail[124 + i] = static_cast<uint8_t>(trailer_crc >> (8 * i));
}

// ---- tar shards (WebDataset) ----

inline std::vector<uint8_t> tar_of(const std::vector<std::pair<std::string, std::string>>& members) {
  std::vector<uint8_t> tar;
  for (const auto& [name, bytes] : members) {
    uint8_t header[512] = {};
    std::snprintf(reinterpret_cast<char*>(header), 100, "%s", name.c_str());
    std::snprintf(reinterpret_cast<char*>(header) + 100, 8, "%07o", 0644);
    std::snprintf(reinterpret_cast<char*>(header) + 124, 12, "%011lo", static_cast<unsigned long>(bytes.size()));
    header[156] = '0';
    std::memcpy(header + 257, "ustar\0" "00", 8);
    tar.insert(tar.end(), header, header + 512);
    tar.insert(tar.end(), bytes.begin(), bytes.end());
    tar.resize((tar.size() + 511) / 512 * 512, 0);
  }
  tar.resize(tar.size() + 1024, 0);
  return tar;
}

// Two samples (a PNG signature is enough for indexing: images are decoded only when read) and their labels.
inline std::vector<uint8_t> seed_tar() {
  const std::string png("\x89PNG\r\n\x1a\n0123456789abcdef", 24);
  return tar_of({{"a.png", png}, {"a.cls", "0\n"}, {"b.png", png}, {"b.cls", "1\n"}});
}

// Every member header's size field and type flag.
inline std::vector<Field> tar_fields(const std::vector<uint8_t>& tar) {
  std::vector<Field> fields;
  uint64_t offset = 0;
  for (int member = 0; offset + 512 <= tar.size() && tar[offset] != 0; ++member) {
    const std::string name = "member[" + std::to_string(member) + "].";
    fields.push_back({name + "size", offset + 124, 12, Encoding::tar_octal});
    fields.push_back({name + "type", offset + 156, 1});
    const uint64_t size = std::strtoull(reinterpret_cast<const char*>(tar.data() + offset + 124), nullptr, 8);
    offset += 512 + (size + 511) / 512 * 512;
  }
  return fields;
}

// Sets the fields and recomputes each edited header's checksum.
inline void edit_tar(std::vector<uint8_t>& tar, const std::vector<Field>& fields, const std::vector<Edit>& edits) {
  for (const Edit& e : edits) {
    put_field(tar, fields[e.field], e.value);
    uint8_t* header = tar.data() + fields[e.field].offset / 512 * 512;
    std::memset(header + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; ++i) sum += header[i];
    std::snprintf(reinterpret_cast<char*>(header) + 148, 8, "%06o", sum);
  }
}

// ---- idx files (MNIST) ----

inline std::vector<uint8_t> seed_idx_images() {  // 3 images of 2 x 2
  std::vector<uint8_t> file = {0, 0, 8, 3, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 2};
  for (int i = 0; i < 12; ++i) file.push_back(static_cast<uint8_t>(i * 20));
  return file;
}
inline std::vector<uint8_t> seed_idx_labels() { return {0, 0, 8, 1, 0, 0, 0, 3, 0, 1, 0}; }

inline std::vector<Field> idx_image_fields() {
  return {{"images.magic", 0, 4, Encoding::big_endian}, {"images.count", 4, 4, Encoding::big_endian},
          {"images.height", 8, 4, Encoding::big_endian}, {"images.width", 12, 4, Encoding::big_endian}};
}
inline std::vector<Field> idx_label_fields() {
  return {{"labels.magic", 0, 4, Encoding::big_endian}, {"labels.count", 4, 4, Encoding::big_endian}};
}

inline void edit_fields(std::vector<uint8_t>& bytes, const std::vector<Field>& fields, const std::vector<Edit>& edits) {
  for (const Edit& e : edits) put_field(bytes, fields[e.field], e.value);
}

}  // namespace ddpx::fuzz
