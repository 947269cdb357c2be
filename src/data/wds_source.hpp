// WdsSource: WebDataset tar shards (--data wds:SHARDS), e.g. wds:/data/train-{000000..000127}.tar.
// Guarantees:
//  - SHARDS expands brace ranges {000..127} (zero-padded to the first bound's width) and lists {a,b,c}, as
//    WebDataset's braceexpand does, to at most 1,000,000 shards (each range and their product); every shard must
//    exist, be an uncompressed tar (a .tar.gz is named as such) and hold labels below 1,000,000.
//  - A sample is WebDataset's: consecutive members sharing a key (the member's path up to the first '.' of its
//    file name); its image is the KEY.jpg|jpeg|png member (format from the bytes), its label KEY.cls (a decimal
//    class index). A sample without a .cls or without an image, or with two of either (WebDataset refuses
//    duplicate names too), is an error naming the shard and the key.
//  - Shards and classes.txt are opened as io/posix_file's InputFile (a FIFO or device is refused at once); every
//    member's offset and size is checked against the shard's size without a sum that can wrap
//    (core/byte_range.hpp); a shard cut short while a run reads it is an error naming it.
//  - The shards are indexed once at open (tar headers only, and the small .cls members); images are read with
//    pread from the shard when a batch needs them. ustar, GNU and pax (path records) headers are read.
//  - The shards are the shuffle groups: each epoch takes the shards in an order drawn from (seed, epoch), their
//    samples streamed front to back through the training run's --shuffle-buffer (Note [Shuffle buffer],
//    data/epoch_sampler.hpp), so reads stay near the front of few shards at a time.
//  - classes = the largest label + 1; or, where the first shard's folder holds classes.txt (one name a line, line k
//    naming label k), its names: a list too short for the largest label is an error naming the file.
#pragma once
#include <string>
#include <vector>

#include "data/data_origin.hpp"
#include "data/sample_source.hpp"
#include "io/posix_file.hpp"

namespace ddpx {

// `origin`: the flag that named the pattern, named by the errors.
std::vector<std::string> expand_braces(const std::string& pattern, DataOrigin origin);

class WdsSource : public SampleSource {
 public:
  // `origin`: the flag that named the shards (--data, --val, ddpx pack SOURCE, ...), named by every error here.
  WdsSource(const std::string& pattern, DataOrigin origin);
  WdsSource(const WdsSource&) = delete;
  WdsSource& operator=(const WdsSource&) = delete;
  std::string describe() const override;
  int64_t size() const override { return static_cast<int64_t>(samples_.size()); }
  int32_t label(int64_t index) const override { return samples_[static_cast<size_t>(index)].label; }
  int64_t num_classes() const override { return classes_; }
  std::vector<std::string> class_names() const override { return class_names_; }
  std::string sample_name(int64_t index) const override;
  SampleBytes read(int64_t index, std::vector<uint8_t>& scratch) const override;
  bool photographs() const override { return true; }
  std::vector<int64_t> shuffle_groups() const override { return shard_sizes_; }
  std::vector<FileRole> inputs() const override;
  uint64_t content_hash() const override;

 private:
  struct Sample {
    int shard = 0;
    uint64_t offset = 0, size = 0;
    int32_t label = 0;
    std::string key;
  };
  void index_shard(int shard);
  void read_class_names();

  std::string pattern_;
  DataOrigin origin_;
  std::vector<std::string> shards_;
  std::vector<InputFile> files_;  // one per shard, opened as io/posix_file's InputFile (never a FIFO)
  std::vector<Sample> samples_;
  std::vector<int64_t> shard_sizes_;
  int64_t classes_ = 0;
  std::vector<std::string> class_names_;
};

}  // namespace ddpx
