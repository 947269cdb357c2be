// .npy input taken in order; see npy_dataset.hpp.
#include "data/npy_dataset.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <string_view>

#include "core/error.hpp"
#include "io/npy.hpp"

namespace ddpx {
namespace {

// read_npy's own refusals (no such file, not a .npy, a bad header) name the flag that gave the file too.
HostTensor read_flag_npy(std::string_view flag, const std::string& path) {
  try {
    return read_npy(path);
  } catch (const Error& error) {
    fail("{} {}: {}", flag, path, error.what());
  }
}

}  // namespace

std::vector<float> read_npy_images(const std::string& path, const DataShape& shape) {
  HostTensor images = read_flag_npy("--images", path);
  DDPX_REQUIRE(images.dtype == TensorDType::f32,
               "--images {}: holds {} values; ddpx reads float32 images: save them with np.save(path, "
               "x.astype(np.float32))", path, dtype_name(images.dtype));
  DDPX_REQUIRE(images.shape.size() == 4 && images.shape[1] == shape.channels && images.shape[2] == shape.image_size &&
                   images.shape[3] == shape.image_size,
               "--images {}: shape {} does not match the model's input [N, {}, {}, {}]", path,
               shape_string(images.shape), shape.channels, shape.image_size, shape.image_size);
  DDPX_REQUIRE(images.shape[0] > 0, "--images {}: the file holds no images", path);
  std::vector<float> pixels = images.to_float32();
  for (size_t i = 0; i < pixels.size(); ++i)
    DDPX_REQUIRE(std::isfinite(pixels[i]),
                 "--images {}: value {} at flat index {} (image {}) is not finite; clean the data (e.g. "
                 "np.nan_to_num) before training or evaluating on it", path, pixels[i], i,
                 i / static_cast<size_t>(shape.channels * shape.image_size * shape.image_size));
  return pixels;
}

std::vector<int32_t> read_npy_labels(const std::string& path, int64_t count, const DataShape& shape) {
  HostTensor labels = read_flag_npy("--labels", path);
  DDPX_REQUIRE(labels.dtype == TensorDType::i32 || labels.dtype == TensorDType::i64 || labels.dtype == TensorDType::u8,
               "--labels {}: dtype {} is not an integer type (int64 or int32 class indices expected)", path,
               dtype_name(labels.dtype));
  DDPX_REQUIRE(labels.shape.size() == 1 && labels.shape[0] == count,
               "--labels {}: shape {} does not match the {} images (expected [{}])", path,
               shape_string(labels.shape), count, count);
  std::vector<int64_t> wide = labels.to_int64();
  std::vector<int32_t> narrow(wide.size());
  for (size_t i = 0; i < wide.size(); ++i) {
    DDPX_REQUIRE(wide[i] >= 0 && wide[i] < shape.num_classes,
                 "--labels {}: label {} of image {} is outside the model's classes [0, {})", path, wide[i], i,
                 shape.num_classes);
    narrow[i] = static_cast<int32_t>(wide[i]);
  }
  return narrow;
}

NpyDataset::NpyDataset(const std::string& images_path, const std::string& labels_path, const DataShape& shape)
    : shape_(shape),
      images_path_(images_path),
      images_(read_npy_images(images_path, shape)),
      count_(static_cast<int64_t>(images_.size()) / shape.image_numel()),
      labels_(read_npy_labels(labels_path, count_, shape)),
      samplers_(count_, /*seed=*/0, /*shuffle=*/false, "--images " + images_path) {}

std::string NpyDataset::describe() const {
  return fmt::format("{} ({} images, in order)", images_path_, count_);
}

int64_t NpyDataset::batches_per_epoch(int world, int64_t batch) const {
  return samplers_.get(world, batch).batches_per_epoch();
}

void NpyDataset::fill_batch(int64_t step, int rank, int world, int64_t batch, float* images, int32_t* labels) const {
  thread_local std::vector<SamplePick> picks;
  picks.resize(static_cast<size_t>(batch));
  samplers_.get(world, batch).pick(step, rank, picks.data());
  const int64_t numel = shape_.image_numel();
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t index = picks[static_cast<size_t>(b)].index;
    std::memcpy(images + b * numel, images_.data() + index * numel, static_cast<size_t>(numel) * sizeof(float));
    labels[b] = labels_[static_cast<size_t>(index)];
  }
}

}  // namespace ddpx
