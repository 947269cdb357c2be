// mmap'd packs; see pack_source.hpp.
#include "data/pack_source.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace ddpx {

PackSource::PackSource(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  DDPX_REQUIRE(fd >= 0, "--data pack:{}: cannot open it ({}); make it with `ddpx pack SOURCE {}`", path,
               std::strerror(errno), path);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("--data pack:{}: not a regular file; give the file `ddpx pack` wrote", path);
  }
  map_size_ = static_cast<size_t>(st.st_size);
  if (map_size_ < kPackPreambleBytes + kPackTrailerBytes) {
    ::close(fd);
    fail("--data pack:{}: {} bytes, too short to be a pack (cut short?); run `ddpx pack` again", path, map_size_);
  }
  void* map = ::mmap(nullptr, map_size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  DDPX_REQUIRE(map != MAP_FAILED, "--data pack:{}: mmap failed ({})", path, std::strerror(errno));
  map_ = static_cast<const uint8_t*>(map);
  try {
    DDPX_REQUIRE(std::memcmp(map_, kPackMagic, 8) == 0,
                 "--data pack:{}: not a ddpx pack (no DDPXPACK magic); make one with `ddpx pack SOURCE {}`", path, path);
    uint32_t version = 0;
    for (int i = 0; i < 4; ++i) version |= uint32_t{map_[8 + i]} << (8 * i);
    DDPX_REQUIRE(version == kPackVersion,
                 "--data pack:{}: format version {}, this ddpx reads version {}; repack the source with this ddpx's "
                 "`ddpx pack`", path, version, kPackVersion);
    trailer_ = decode_pack_trailer(map_ + map_size_ - kPackTrailerBytes, path);
    const uint64_t end = map_size_ - kPackTrailerBytes;
    DDPX_REQUIRE(trailer_.records > 0 && trailer_.records <= (end - kPackPreambleBytes) / kPackEntryBytes &&
                     trailer_.index_offset >= kPackPreambleBytes &&
                     trailer_.index_offset + trailer_.records * kPackEntryBytes <= trailer_.classes_offset &&
                     trailer_.classes_offset + trailer_.classes_size == end,
                 "--data pack:{}: the trailer's offsets do not fit the file's {} bytes (damaged); repack it", path,
                 map_size_);
    const uint8_t* index = map_ + trailer_.index_offset;
    DDPX_REQUIRE(crc32(0, index, static_cast<uInt>(trailer_.records * kPackEntryBytes)) == trailer_.index_crc32,
                 "--data pack:{}: the index's checksum does not match (damaged); repack it", path);
    const uint8_t* classes = map_ + trailer_.classes_offset;
    DDPX_REQUIRE(crc32(0, classes, static_cast<uInt>(trailer_.classes_size)) == trailer_.classes_crc32,
                 "--data pack:{}: the class names' checksum does not match (damaged); repack it", path);
    std::string name;
    for (uint64_t i = 0; i < trailer_.classes_size; ++i) {
      if (classes[i] == '\n') {
        classes_.push_back(name);
        name.clear();
      } else {
        name.push_back(static_cast<char>(classes[i]));
      }
    }
    DDPX_REQUIRE(classes_.empty() || classes_.size() == trailer_.class_count,
                 "--data pack:{}: {} class names for {} classes (damaged); repack it", path, classes_.size(),
                 trailer_.class_count);
    photographs_ = (trailer_.flags & kPackPhotographs) != 0;
    entries_.reserve(static_cast<size_t>(trailer_.records));
    for (uint64_t i = 0; i < trailer_.records; ++i) {
      const PackEntry e = decode_pack_entry(index + i * kPackEntryBytes);
      const bool inside = e.offset >= kPackPreambleBytes && e.offset + e.size <= trailer_.index_offset;
      const bool shape = (e.channels == 1 || e.channels == 3) && e.height > 0 && e.width > 0 &&
                         (trailer_.storage != PackStorage::raw || uint64_t{e.size} == uint64_t{e.height} * e.width * e.channels);
      DDPX_REQUIRE(inside && shape && e.label < trailer_.class_count,
                   "--data pack:{}: index entry {} is inconsistent (offset {}, {} bytes, {}x{}x{}, label {} of {} "
                   "classes); the file is damaged: repack it", path, i, e.offset, e.size, e.height, e.width,
                   e.channels, e.label, trailer_.class_count);
      entries_.push_back(e);
    }
  } catch (...) {
    ::munmap(const_cast<uint8_t*>(map_), map_size_);
    throw;
  }
}

PackSource::~PackSource() { ::munmap(const_cast<uint8_t*>(map_), map_size_); }

std::string PackSource::describe() const {
  return fmt::format("pack {} ({} {} images{}, {} classes)", path_, entries_.size(),
                     trailer_.storage == PackStorage::raw ? "raw" : fmt::format("JPEG q{}", trailer_.jpeg_quality),
                     trailer_.max_side > 0 ? fmt::format(", longer side <= {}", trailer_.max_side) : "",
                     trailer_.class_count);
}

std::string PackSource::sample_name(int64_t index) const { return fmt::format("{} record {}", path_, index); }

SampleBytes PackSource::read(int64_t index, std::vector<uint8_t>&) const {
  const PackEntry& e = entries_[static_cast<size_t>(index)];
  const uint8_t* data = map_ + e.offset;
  DDPX_REQUIRE(crc32(0, data, e.size) == e.crc32,
               "--data pack:{}: record {} fails its checksum (the file is damaged on disk); repack it", path_, index);
  SampleBytes bytes;
  bytes.format = trailer_.storage == PackStorage::raw ? SampleFormat::raw : SampleFormat::jpeg;
  bytes.data = data;
  bytes.size = e.size;
  bytes.height = e.height;
  bytes.width = e.width;
  bytes.channels = e.channels;
  return bytes;
}

}  // namespace ddpx
