// PackSource: a `ddpx pack` file read through mmap (--data pack:FILE); layout in data/pack_format.hpp and
// docs/pack-format.md.
// Guarantees:
//  - At open: the preamble's magic and version, the trailer's magic, version and CRC, the index's and the class
//    names' CRC-32s, and every entry (inside the records region, a raw record's size = height x width x channels,
//    channels 1 or 3, label below the class count) are checked; any failure is an error naming the file and
//    saying to repack it.
//  - Each record's CRC-32 is checked when a batch reads it; a mismatch names the file and the record.
//  - Raw records are served in place from the mapping (no copy); JPEG records go through the JPEG decoder.
#pragma once
#include <string>
#include <vector>

#include "data/pack_format.hpp"
#include "data/sample_source.hpp"

namespace ddpx {

class PackSource : public SampleSource {
 public:
  explicit PackSource(const std::string& path);
  ~PackSource() override;
  PackSource(const PackSource&) = delete;
  PackSource& operator=(const PackSource&) = delete;
  std::string describe() const override;
  int64_t size() const override { return static_cast<int64_t>(entries_.size()); }
  int32_t label(int64_t index) const override { return static_cast<int32_t>(entries_[static_cast<size_t>(index)].label); }
  int64_t num_classes() const override { return trailer_.class_count; }
  std::vector<std::string> class_names() const override { return classes_; }
  std::string sample_name(int64_t index) const override;
  SampleBytes read(int64_t index, std::vector<uint8_t>& scratch) const override;
  bool photographs() const override { return photographs_; }
  const PackTrailer& trailer() const { return trailer_; }

 private:
  std::string path_;
  const uint8_t* map_ = nullptr;
  size_t map_size_ = 0;
  PackTrailer trailer_;
  std::vector<PackEntry> entries_;
  std::vector<std::string> classes_;
  bool photographs_ = true;
};

}  // namespace ddpx
