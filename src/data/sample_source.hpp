// SampleSource: an indexed collection of labelled images (idx files, an image folder, a packed file, tar shards),
// read by any loader thread. Sources only hand over a sample's bytes; decoding, cropping and resizing are the
// image pipeline's (data/image_pipeline.hpp), the order the sampler's (data/epoch_sampler.hpp).
// Guarantees of every implementation:
//  - size(), label(), read() are thread-safe and deterministic; labels are in [0, num_classes()), checked when
//    the source is opened (an error names the file and the label).
//  - sample_name(i) names the file (and member or record) a sample comes from, for error messages.
//  - inputs() names every file the samples are read from and every folder whose listing decides them, for
//    io/same_file's check that no output of a command overwrites its data (`ddpx pack folder:D D/c0/0.png`).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/same_file.hpp"

namespace ddpx {

enum class SampleFormat { raw, jpeg, png };

struct SampleBytes {
  SampleFormat format = SampleFormat::raw;
  const uint8_t* data = nullptr;  // raw: HWC uint8 pixels; jpeg/png: the encoded file
  size_t size = 0;
  int height = 0, width = 0, channels = 0;  // raw only
};

class SampleSource {
 public:
  virtual ~SampleSource() = default;
  virtual std::string describe() const = 0;  // "Fashion-MNIST idx files in DIR (train, 60000 images)"
  virtual int64_t size() const = 0;
  virtual int32_t label(int64_t index) const = 0;
  virtual int64_t num_classes() const = 0;
  virtual std::vector<std::string> class_names() const { return {}; }
  virtual std::string sample_name(int64_t index) const = 0;
  // The bytes of sample `index`: in `scratch` (read from a file) or in the source's own memory.
  virtual SampleBytes read(int64_t index, std::vector<uint8_t>& scratch) const = 0;
  // Photographs get RandomResizedCrop and a flip by default; small centered images (idx) a plain resize.
  virtual bool photographs() const = 0;
  // Shard sizes when the source is shuffled shard by shard (wds: every epoch takes whole shards in a shuffled
  // order, samples within a shard in their stored order); empty: samples are shuffled individually.
  virtual std::vector<int64_t> shuffle_groups() const { return {}; }
  // The files and folders (FileRole::Kind::folder: the whole tree) the samples come from.
  virtual std::vector<FileRole> inputs() const = 0;
  // A hash of what decides the samples and labels, independent of where the data lies: a folder's file list
  // (paths under the folder) and labels, a pack's trailer (it holds the CRC-32 of the index, which holds every
  // record's CRC-32), the shards' member names, sizes and labels, the idx files' bytes. See data_fingerprint().
  virtual uint64_t content_hash() const = 0;
};

// What a checkpoint records of its training data and a resume compares (train/checkpointing.cpp): "N samples, K
// classes, contents HASH" (content_hash(), hex).
std::string data_fingerprint(const SampleSource& source);

}  // namespace ddpx
