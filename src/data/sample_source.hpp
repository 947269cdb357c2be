// SampleSource: an indexed collection of labelled images (idx files, an image folder, a packed file, tar shards),
// read by any loader thread. Sources only hand over a sample's bytes; decoding, cropping and resizing are the
// image pipeline's (data/image_pipeline.hpp), the order the sampler's (data/epoch_sampler.hpp).
// Guarantees of every implementation:
//  - size(), label(), read() are thread-safe and deterministic; labels are in [0, num_classes()), checked when
//    the source is opened (an error names the file and the label).
//  - sample_name(i) names the file (and member or record) a sample comes from, for error messages.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

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
};

}  // namespace ddpx
