// PackSource: a `ddpx pack` file read with pread (--data pack:FILE); layout in data/pack_format.hpp and
// docs/pack-format.md.
// Guarantees:
//  - Opened as io/posix_file's InputFile: a FIFO, a device or a folder is refused at once, naming the file.
//  - At open: the preamble's magic and version, the trailer's magic, version and CRC, every offset and size of the
//    trailer (checked with core/byte_range.hpp, so no value near 2^64 can wrap a bounds check), the index's and the
//    class names' CRC-32s, the class names themselves, and every entry (inside the records region, a raw record's
//    size = height x width x channels, channels 1 or 3, label below the class count) are checked; any failure is
//    an error naming the file and saying to repack it.
//  - Each record is read with pread into the caller's scratch and its CRC-32 checked there; a mismatch names the
//    file and the record. A file truncated or rewritten in place while a run reads it is an error naming the file
//    (short read) or the record (checksum), never a crash: the pack is not mapped, so there is no SIGBUS.
#pragma once
#include <string>
#include <vector>

#include "data/data_origin.hpp"
#include "data/pack_format.hpp"
#include "data/sample_source.hpp"
#include "io/posix_file.hpp"

namespace ddpx {

class PackSource : public SampleSource {
 public:
  // `origin`: the flag that named the file (--data, --val, ddpx pack SOURCE, ...), named by every error here.
  PackSource(const std::string& path, DataOrigin origin);
  std::string describe() const override;
  int64_t size() const override { return static_cast<int64_t>(entries_.size()); }
  int32_t label(int64_t index) const override { return static_cast<int32_t>(entries_[static_cast<size_t>(index)].label); }
  int64_t num_classes() const override { return trailer_.class_count; }
  std::vector<std::string> class_names() const override { return classes_; }
  std::string sample_name(int64_t index) const override;
  SampleBytes read(int64_t index, std::vector<uint8_t>& scratch) const override;
  bool photographs() const override { return photographs_; }
  const PackTrailer& trailer() const { return trailer_; }
  std::vector<FileRole> inputs() const override { return {{"the data pack:" + path_, path_}}; }
  uint64_t content_hash() const override { return trailer_hash_; }

 private:
  std::string path_;
  DataOrigin origin_;
  InputFile file_;
  PackTrailer trailer_;
  std::vector<PackEntry> entries_;
  std::vector<std::string> classes_;
  bool photographs_ = true;
  uint64_t trailer_hash_ = 0;
};

}  // namespace ddpx
