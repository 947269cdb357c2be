// Dataset: where training batches come from.
// Guarantee: fill_batch(step, rank, ...) is a pure function of (dataset seed, step, rank, world): any thread may fill
// any batch in any order, two runs with the same seed see identical data, and a resumed run continues with exactly
// the batches an uninterrupted run would have seen. Ranks see disjoint data (DistributedSampler-like; image sources:
// data/epoch_sampler.hpp).
// Image sources (idx, folder, pack, wds) also fill uint8 batches (fill_pixels: [batch, H, W, C], decoded, cropped
// and resized on the loader's threads); fill_batch is then fill_pixels followed by normalize_pixels on the host
// (data/pixel_normalization.hpp) and --random-erase's boxes, and a CUDA engine may instead copy the uint8 batch and
// normalize on the device (not with --random-erase).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/auto_augment.hpp"
#include "data/random_erasing.hpp"

namespace ddpx {

struct DataShape {
  int64_t channels = 3, image_size = 224, num_classes = 1000;
  int64_t image_numel() const { return channels * image_size * image_size; }
};

// torchvision's Normalize: (pixel / 255 - mean[c]) / std[c]. ImageNet's values by default; a one-channel model
// gets their averages (0.449, 0.226) unless --mean/--std say otherwise.
struct PixelNormalization {
  std::vector<float> mean, std;  // empty: ImageNet's for the model's channel count
  std::vector<float> mean_for(int64_t channels) const;
  std::vector<float> std_for(int64_t channels) const;
};

// Which torchvision transform image sources apply. auto: crop-flip for photographs (folder, pack, wds), resize
// (the eval transform, the identity when sizes match) for idx.
enum class Augmentation { automatic, crop_flip, resize };

// --shuffle-buffer auto (parse_shuffle_buffer, data/data_spec.hpp).
inline constexpr int64_t kAutoShuffleBuffer = -1;

// The image pipeline's flags (--augment, --mean, --std, --max-pixels, --randaugment, --trivial-augment,
// --auto-augment-policy, --random-erase, --shuffle-buffer), parsed once
// where the flags are read.
struct ImagePipelineSettings {
  Augmentation augmentation = Augmentation::automatic;
  PixelNormalization normalization;
  int64_t max_pixels = 178956970;  // decompression-bomb limit (PIL's default: 2 x 89,478,485); see Note [Pixel limit]
  bool dct_scaling = true;  // JPEG crops decoded at 1/2..1/8 scale where they allow (data/image_decode.hpp)
  // The eval transform's resize side for photographs (torchvision's --val-resize-size); 0: int(size / 0.875).
  int64_t eval_resize = 0;
  // --randaugment N,M, --trivial-augment or --auto-augment-policy P: training data only (data/auto_augment.hpp);
  // off by default.
  AutoAugmentSpec auto_augment;
  // --random-erase P: training data only, on the normalized image (data/random_erasing.hpp); off by default.
  RandomErasingSpec random_erasing;
  // Sources read shard by shard (wds): the slots of WebDataset's shuffle(n) buffer the training stream passes
  // through (Note [Shuffle buffer], data/epoch_sampler.hpp); 0 or 1: off; kAutoShuffleBuffer: 1000, raised where
  // the stored order has long runs of one class (ImageDataset says how). Training data only.
  int64_t shuffle_buffer = kAutoShuffleBuffer;
  // > 0: the eval transform is Resize(size / f) + CenterCrop(size) whatever the source (`ddpx eval`: the training
  // data's f, from the weights' metadata); 0: the source's own (0.875 for photographs, 1 for idx).
  double center_crop_fraction = 0;
};

// What a source needs beyond its spec: the model's input, the seed, the pipeline's settings. Filled by the trainer.
struct DatasetContext {
  DataShape shape;
  uint64_t seed = 0;
  ImagePipelineSettings images;
  bool training = true;  // false: --val (no shuffle, the eval transform)
  // --repeated-augment R: torchvision's repeated-augmentation sampler for the training data (Note [Repeated
  // augmentation], data/epoch_sampler.hpp); 0 or 1: off. Image sources read sample by sample; others refuse it.
  int64_t repeated_augment = 0;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual std::string describe() const = 0;
  virtual const DataShape& shape() const = 0;
  // Writes `batch` images (NCHW float32) and labels for global step `step` as seen by `rank` of `world`.
  virtual void fill_batch(int64_t step, int rank, int world, int64_t batch, float* images, int32_t* labels) const = 0;
  // Image sources: the same batch as uint8 [batch, H, W, C] before normalization. Others: false, nothing written.
  virtual bool fills_pixels() const { return false; }
  virtual void fill_pixels(int64_t step, int rank, int world, int64_t batch, uint8_t* pixels, int32_t* labels) const;
  // Image sources: batches per epoch on every rank (see Note [Epochs and the sampler]); 0: no epochs (endless).
  virtual int64_t batches_per_epoch(int world, int64_t batch) const { return 0; }
  // Image sources with named classes (folder, pack of a folder): the class names, label = index.
  virtual std::vector<std::string> class_names() const { return {}; }
  // Image sources: the part of the resized image the eval transform's center crop keeps (size / resize); 0: none.
  virtual double center_crop_fraction() const { return 0; }
};

struct DataSpec;
// Builds the dataset a spec names, through its registry row (data/data_sources.hpp); errors name the flag, the file
// and what to do.
std::unique_ptr<Dataset> make_dataset(const DataSpec& spec, const DatasetContext& context);

}  // namespace ddpx
