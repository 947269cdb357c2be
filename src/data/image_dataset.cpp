// Sampler + pipeline over a SampleSource; see image_dataset.hpp.
#include "data/image_dataset.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"
#include "data/image_transform.hpp"
#include "data/pixel_normalization.hpp"

namespace ddpx {
namespace {

uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Before any step: the first sample whose label the model has no class for, by name (file, member or record), with
// its label (and class name where the source has them) and both counts.
void require_labels_in_model(const SampleSource& source, int64_t model_classes, const std::string& flag_text) {
  if (source.num_classes() <= model_classes) return;
  const std::vector<std::string> names = source.class_names();
  for (int64_t i = 0; i < source.size(); ++i) {
    const int32_t label = source.label(i);
    if (label < model_classes) continue;
    fail("{}: {} has label {}{}, but the model has {} classes (labels 0 to {}); the data has {} classes: use a model "
         "with classes={} or more (e.g. --model mlp:...,classes={}), or leave classes= out of --model to take the "
         "data's", flag_text, source.sample_name(i), label,
         static_cast<size_t>(label) < names.size() ? fmt::format(" (class '{}')", names[static_cast<size_t>(label)])
                                                   : "",
         model_classes, model_classes - 1, source.num_classes(), source.num_classes(), source.num_classes());
  }
  // A source that names more classes than its samples use (a pack of a folder with an empty class, say).
  fail("{}: {} names {} classes, but the model has {}; use a model with classes={} (or leave classes= out of --model "
       "to take the data's)", flag_text, source.describe(), source.num_classes(), model_classes,
       source.num_classes());
}

// (length, label) of the longest run of one label in the stored order; (0, 0) for sources without shuffle groups.
std::pair<int64_t, int32_t> longest_label_run(const SampleSource& source) {
  std::pair<int64_t, int32_t> longest{0, 0};
  if (source.shuffle_groups().empty()) return longest;
  int64_t run = 0;
  for (int64_t i = 0; i < source.size(); ++i) {
    run = i > 0 && source.label(i) == source.label(i - 1) ? run + 1 : 1;
    if (run > longest.first) longest = {run, source.label(i)};
  }
  return longest;
}

constexpr int64_t kBaseShuffleBuffer = 1000;  // WebDataset's usual shuffle(1000)

// auto: 1000, or enough to mix 10 runs of one class (at most the data's size: then a full shuffle).
int64_t resolved_shuffle_buffer(int64_t requested, int64_t longest_run, int64_t samples) {
  if (requested != kAutoShuffleBuffer) return requested;
  return std::max(kBaseShuffleBuffer, std::min(10 * longest_run, samples));
}

// --repeated-augment R, refused on sources streamed shard by shard (Note [Repeated augmentation]).
int64_t repeated_augment(const DatasetContext& context, const SampleSource& source, const std::string& flag_text) {
  if (context.repeated_augment <= 1) return 0;
  DDPX_REQUIRE(source.shuffle_groups().empty(),
               "--repeated-augment {}: {} is read shard by shard (a stream through a shuffle buffer), so torchvision's "
               "sampler's order cannot be followed; use a source read sample by sample (idx:, folder:, pack:) or "
               "leave --repeated-augment off", context.repeated_augment, flag_text);
  return context.repeated_augment;
}

// The generator of one sample's draws, keyed by (seed, epoch, position) and a salt naming the stream.
Rng sample_rng(uint64_t seed, uint64_t salt, const SamplePick& pick) {
  return Rng(mix64(mix64(seed ^ salt) + static_cast<uint64_t>(pick.epoch)) ^ static_cast<uint64_t>(pick.position));
}

}  // namespace

ImageDataset::ImageDataset(std::shared_ptr<const SampleSource> source, const DatasetContext& context,
                           const std::string& flag_text)
    : source_(std::move(source)),
      shape_(context.shape),
      seed_(context.seed),
      shuffle_(context.training),
      flag_text_(flag_text),
      longest_label_run_(context.training ? longest_label_run(*source_) : std::pair<int64_t, int32_t>{0, 0}),
      shuffle_buffer_(context.training && !source_->shuffle_groups().empty()
                          ? resolved_shuffle_buffer(context.images.shuffle_buffer, longest_label_run_.first,
                                                    source_->size())
                          : 0),
      auto_buffer_raised_(context.images.shuffle_buffer == kAutoShuffleBuffer && shuffle_buffer_ > kBaseShuffleBuffer),
      repeats_(context.training ? repeated_augment(context, *source_, flag_text) : 0),
      samplers_(source_->size(), seed_, shuffle_, flag_text_, source_->shuffle_groups(), shuffle_buffer_, repeats_) {
  DDPX_REQUIRE(shape_.channels == 1 || shape_.channels == 3,
               "{}: the model takes {} channels; image sources give 1 (gray) or 3 (RGB)", flag_text_, shape_.channels);
  require_labels_in_model(*source_, shape_.num_classes, flag_text_);
  const Augmentation augmentation =
      context.images.augmentation != Augmentation::automatic
          ? context.images.augmentation
          : (source_->photographs() && context.training ? Augmentation::crop_flip : Augmentation::resize);
  transform_.crop_flip = augmentation == Augmentation::crop_flip;
  transform_.size = static_cast<int>(shape_.image_size);
  // The eval resize side: the one given (torchvision's --val-resize-size) for photographs; else torchvision's
  // int(size / crop fraction) (256 for 224, 36 for 32), the fraction being the training data's where `ddpx eval`'s
  // weights record it, 0.875 for photographs; idx and other small centered images: no margin (fraction 1).
  DDPX_REQUIRE(context.images.eval_resize == 0 || context.images.eval_resize >= shape_.image_size,
               "{}: the eval resize side {} is below the crop {}: give a resize side of at least {} (torchvision's "
               "--val-resize-size >= --val-crop-size)", flag_text_, context.images.eval_resize, shape_.image_size,
               shape_.image_size);
  const double crop_fraction = context.images.center_crop_fraction > 0 ? context.images.center_crop_fraction
                               : source_->photographs()                  ? 0.875
                                                                         : 1.0;
  transform_.resize = source_->photographs() && context.images.eval_resize > 0
                          ? static_cast<int>(context.images.eval_resize)
                          : eval_resize_side(static_cast<int>(shape_.image_size), crop_fraction);
  transform_.channels = static_cast<int>(shape_.channels);
  transform_.max_pixels = context.images.max_pixels;
  transform_.dct_scaling = context.images.dct_scaling;
  if (context.training) {  // never on --val
    transform_.auto_augment = context.images.auto_augment;
    erasing_ = context.images.random_erasing;
  }
  mean_ = context.images.normalization.mean_for(shape_.channels);
  std_ = context.images.normalization.std_for(shape_.channels);
  DDPX_REQUIRE(static_cast<int64_t>(mean_.size()) == shape_.channels && static_cast<int64_t>(std_.size()) == shape_.channels,
               "--mean/--std: {} and {} values for a model with {} channel(s); give one per channel", mean_.size(),
               std_.size(), shape_.channels);
  for (float s : std_) DDPX_REQUIRE(s > 0 && std::isfinite(s), "--std {}: every value must be positive", s);
}

bool ImageDataset::buffer_spans_few_classes() const {
  // A buffer as large as the data is a full shuffle, whatever the runs.
  return longest_label_run_.first > 1 && shuffle_buffer_ < source_->size() &&
         10 * longest_label_run_.first > std::max<int64_t>(shuffle_buffer_, 1);
}

std::string ImageDataset::describe() const {
  return fmt::format("{}, {}{}{}{}{}", source_->describe(),
                     transform_.crop_flip ? fmt::format("RandomResizedCrop({}) + flip", transform_.size)
                                          : fmt::format("resize {} + center crop {}", transform_.resize, transform_.size),
                     transform_.auto_augment.enabled() ? " + " + transform_.auto_augment.describe() : "",
                     erasing_.enabled() ? " + Normalize + " + erasing_.describe() : "",
                     !shuffle_              ? ""
                     : shuffle_buffer_ > 1
                         ? fmt::format(", shuffled per epoch (shards, then a buffer of {} samples{})", shuffle_buffer_,
                                       auto_buffer_raised_
                                           ? fmt::format("; auto: raised from 1000 for the shards' run of {} samples "
                                                         "of class {}", longest_label_run_.first,
                                                         longest_label_run_.second)
                                           : "")
                     : repeats_ > 1 ? fmt::format(", each sample {} times per epoch in torch.randperm's order "
                                                  "(--repeated-augment; an epoch of {} samples)",
                                                  repeats_, source_->size() / 256 * 256)
                     : source_->shuffle_groups().empty() ? ", shuffled per epoch"
                                                         : ", shards shuffled per epoch, samples in stored order",
                     buffer_spans_few_classes()
                         ? fmt::format(" (warning: the shards hold {} samples of class {} in a row, and a "
                                       "--shuffle-buffer of {} mixes fewer than 10 such runs: batches will hold few "
                                       "classes and train worse; raise --shuffle-buffer to {} or more, or write the "
                                       "shards shuffled)",
                                       longest_label_run_.first, longest_label_run_.second, shuffle_buffer_,
                                       std::min<int64_t>(10 * longest_label_run_.first, source_->size()))
                         : "");
}

int64_t ImageDataset::batches_per_epoch(int world, int64_t batch) const {
  return samplers_.get(world, batch).batches_per_epoch();
}

void ImageDataset::fill_pixels(int64_t step, int rank, int world, int64_t batch, uint8_t* pixels,
                               int32_t* labels) const {
  std::vector<SamplePick> picks(static_cast<size_t>(batch));
  samplers_.get(world, batch).pick(step, rank, picks.data());
  thread_local PipelineScratch scratch;
  const int64_t image_bytes = shape_.image_numel();
  for (int64_t t = 0; t < batch; ++t) {
    const SamplePick& pick = picks[static_cast<size_t>(t)];
    Rng rng = sample_rng(seed_, 0x61756775ULL, pick);
    transform_sample(*source_, pick.index, transform_, rng, scratch, pixels + t * image_bytes);
    labels[t] = source_->label(pick.index);
  }
}

std::vector<std::string> ImageDataset::picked_names(int64_t step, int rank, int world, int64_t batch) const {
  std::vector<SamplePick> picks(static_cast<size_t>(batch));
  samplers_.get(world, batch).pick(step, rank, picks.data());
  std::vector<std::string> names;
  for (const SamplePick& pick : picks) names.push_back(source_->sample_name(pick.index));
  return names;
}

void ImageDataset::fill_batch(int64_t step, int rank, int world, int64_t batch, float* images, int32_t* labels) const {
  thread_local std::vector<uint8_t> pixels;
  pixels.resize(static_cast<size_t>(batch * shape_.image_numel()));
  fill_pixels(step, rank, world, batch, pixels.data(), labels);
  normalize_pixels(pixels.data(), batch, shape_.image_size, shape_.channels, mean_, std_, images);
  if (!erasing_.enabled()) return;
  const std::vector<ErasingBox> boxes = erasing_boxes(step, rank, world, batch);
  const int size = static_cast<int>(shape_.image_size);
  for (int64_t t = 0; t < batch; ++t)
    erase_box(boxes[static_cast<size_t>(t)], images + t * shape_.image_numel(), static_cast<int>(shape_.channels),
              size, size);
}

std::vector<ErasingBox> ImageDataset::erasing_boxes(int64_t step, int rank, int world, int64_t batch) const {
  std::vector<ErasingBox> boxes(static_cast<size_t>(batch));
  if (!erasing_.enabled()) return boxes;
  std::vector<SamplePick> picks(static_cast<size_t>(batch));
  samplers_.get(world, batch).pick(step, rank, picks.data());
  const int size = static_cast<int>(shape_.image_size);
  for (size_t t = 0; t < picks.size(); ++t) {
    Rng rng = sample_rng(seed_, 0x6572617365ULL, picks[t]);  // "erase": a stream apart from the pipeline's
    boxes[t] = random_erasing_box(erasing_, size, size, rng);
  }
  return boxes;
}

}  // namespace ddpx
