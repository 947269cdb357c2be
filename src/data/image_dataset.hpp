// ImageDataset: a SampleSource seen through the epoch sampler and the image pipeline, as a Dataset.
// Guarantees:
//  - fill_pixels(step, rank, world, batch) holds the samples EpochSampler picks for micro-batch `step` (see Note
//    [Epochs and the sampler]), each transformed with a generator keyed by (seed, epoch, global position): a pure
//    function of (seed, step, rank, world), whatever thread fills it. Training data read shard by shard (wds)
//    passes through the --shuffle-buffer (Note [Shuffle buffer]); --val never does. auto is 1000 samples, raised to
//    10 x the longest run of one label in the stored order (at most the data's size), so a class-sorted shard
//    mixes; the start-up line (describe) says so, and warns when a given buffer mixes fewer than 10 runs.
//  - fill_batch is fill_pixels then normalize_pixels (host normalization, for the CPU engine and the CUDA engine's
//    float path), then, training with --random-erase, each image's erasing_boxes() set to 0 (torchvision's
//    RandomErasing after Normalize), from a second generator keyed by the same (seed, epoch, position).
//  - Labels outside the model's classes are refused when the dataset is built, naming the first such sample (file,
//    member or record), its label and both class counts.
#pragma once
#include <memory>
#include <utility>

#include "data/dataset.hpp"
#include "data/epoch_sampler.hpp"
#include "data/image_pipeline.hpp"
#include "data/random_erasing.hpp"
#include "data/sample_source.hpp"

namespace ddpx {

class ImageDataset : public Dataset {
 public:
  // `source` may be shared with whoever opened it (data/data_sources.hpp's OpenedData): SampleSource is read-only
  // and thread-safe. `flag_text` names it as the user typed it ("--val folder:D"), for messages.
  ImageDataset(std::shared_ptr<const SampleSource> source, const DatasetContext& context, const std::string& flag_text);
  std::string describe() const override;
  const DataShape& shape() const override { return shape_; }
  void fill_batch(int64_t step, int rank, int world, int64_t batch, float* images, int32_t* labels) const override;
  bool fills_pixels() const override { return true; }
  void fill_pixels(int64_t step, int rank, int world, int64_t batch, uint8_t* pixels, int32_t* labels) const override;
  int64_t batches_per_epoch(int world, int64_t batch) const override;
  std::vector<std::string> class_names() const override { return source_->class_names(); }
  double center_crop_fraction() const override {
    return static_cast<double>(transform_.size) / static_cast<double>(transform_.resize);
  }
  const SampleSource& source() const { return *source_; }
  // The names (file, member or record) of the samples fill_pixels puts in that batch, in order.
  std::vector<std::string> picked_names(int64_t step, int rank, int world, int64_t batch) const;
  const TransformSpec& transform() const { return transform_; }
  // --random-erase's box of each image fill_batch fills for that batch, in order (empty: not erased; all empty
  // without --random-erase and on --val).
  std::vector<ErasingBox> erasing_boxes(int64_t step, int rank, int world, int64_t batch) const;

 private:
  std::shared_ptr<const SampleSource> source_;
  DataShape shape_;
  uint64_t seed_;
  bool shuffle_;
  std::string flag_text_;  // "--data idx:DIR:train", for messages
  TransformSpec transform_;
  RandomErasingSpec erasing_;  // training only
  std::vector<float> mean_, std_;
  // The training stream's longest run of one label in stored order (sources with shuffle groups; else 0): auto
  // sizes the buffer to mix 10 such runs, and describe() warns when a given buffer mixes fewer.
  std::pair<int64_t, int32_t> longest_label_run_;  // (length, label)
  int64_t shuffle_buffer_;  // the training stream's, resolved (sources with shuffle groups); 0 otherwise
  bool auto_buffer_raised_ = false;  // auto, raised above 1000 for the runs
  int64_t repeats_ = 0;  // --repeated-augment R (training data; Note [Repeated augmentation]); 0: off
  bool buffer_spans_few_classes() const;  // the buffer mixes fewer than 10 such runs
  EpochSamplers samplers_;
};

}  // namespace ddpx
