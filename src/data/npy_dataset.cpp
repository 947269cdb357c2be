// .npy input taken in order; see npy_dataset.hpp.
#include "data/npy_dataset.hpp"

#include <fmt/format.h>

#include <cstring>

#include "core/error.hpp"
#include "io/npy.hpp"

namespace ddpx {

NpyDataset::NpyDataset(const std::string& images_path, const std::string& labels_path, const DataShape& shape)
    : shape_(shape), images_path_(images_path) {
  HostTensor images = read_npy(images_path);
  DDPX_REQUIRE(images.dtype == TensorDType::f32 || images.dtype == TensorDType::f64,
               "--images {}: dtype {} is not float32 (NCHW float32 images expected)", images_path,
               dtype_name(images.dtype));
  DDPX_REQUIRE(images.shape.size() == 4 && images.shape[1] == shape.channels && images.shape[2] == shape.image_size &&
                   images.shape[3] == shape.image_size,
               "--images {}: shape {} does not match the model's input [N, {}, {}, {}]", images_path,
               shape_string(images.shape), shape.channels, shape.image_size, shape.image_size);
  count_ = images.shape[0];
  DDPX_REQUIRE(count_ > 0, "--images {}: holds no images", images_path);
  HostTensor labels = read_npy(labels_path);
  DDPX_REQUIRE(labels.dtype == TensorDType::i32 || labels.dtype == TensorDType::i64 || labels.dtype == TensorDType::u8,
               "--labels {}: dtype {} is not an integer type (int64 or int32 class indices expected)", labels_path,
               dtype_name(labels.dtype));
  DDPX_REQUIRE(labels.shape.size() == 1 && labels.shape[0] == count_,
               "--labels {}: shape {} does not match the {} images of {} (expected [{}])", labels_path,
               shape_string(labels.shape), count_, images_path, count_);
  images_ = images.to_float32();
  std::vector<int64_t> wide = labels.to_int64();
  labels_.resize(wide.size());
  for (size_t i = 0; i < wide.size(); ++i) {
    DDPX_REQUIRE(wide[i] >= 0 && wide[i] < shape.num_classes,
                 "--labels {}: label {} at index {} is outside [0, {}) (the model's classes)", labels_path, wide[i], i,
                 shape.num_classes);
    labels_[i] = static_cast<int32_t>(wide[i]);
  }
}

std::string NpyDataset::describe() const {
  return fmt::format("{} ({} images, in order)", images_path_, count_);
}

void NpyDataset::fill_batch(int64_t step, int rank, int world, int64_t batch, float* images, int32_t* labels) const {
  const int64_t numel = shape_.image_numel();
  const int64_t first = ((step * world + rank) * batch) % count_;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t index = (first + b) % count_;
    std::memcpy(images + b * numel, images_.data() + index * numel, static_cast<size_t>(numel) * sizeof(float));
    labels[b] = labels_[static_cast<size_t>(index)];
  }
}

}  // namespace ddpx
