// NpyDataset: batches taken in order from an images .npy ([N, C, H, W] float32) and a labels .npy ([N] int32/int64).
// Guarantees: epochs as the image sources have them (EpochSampler, Note [Epochs and the sampler]) without the
// shuffle: every epoch is 0..N-1, rank r of `world` takes positions r, r+world, ..., and each rank drops its last
// partial batch, so micro-batch m of `world` ranks x `batch` holds, over all ranks, samples m*world*batch ...
// +world*batch-1 of the epoch's order (the same images as one rank of world*batch) and no image repeats within an
// epoch unless N is not a multiple of the world size (DistributedSampler's padding). A `batch` larger than one
// rank's share of N is refused naming --batch, N and the largest batch that fits. Shapes are checked against the
// model at construction (errors name the file, its shape and the model's expectation).
// read_npy_images/read_npy_labels are the one policy for image and label files, used by train and eval alike:
// images float32 only (float64 is refused with the line that converts it, as eval always did), every value
// finite (a NaN pixel is refused naming its index, instead of a NaN loss or NaN logits with exit 0), labels
// int32/int64/uint8 within the model's classes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.hpp"
#include "data/epoch_sampler.hpp"

namespace ddpx {

std::vector<float> read_npy_images(const std::string& path, const DataShape& shape);  // [N, C, H, W], N >= 1
std::vector<int32_t> read_npy_labels(const std::string& path, int64_t count, const DataShape& shape);

class NpyDataset : public Dataset {
 public:
  NpyDataset(const std::string& images_path, const std::string& labels_path, const DataShape& shape);
  std::string describe() const override;
  const DataShape& shape() const override { return shape_; }
  void fill_batch(int64_t step, int rank, int world, int64_t batch, float* images, int32_t* labels) const override;
  int64_t batches_per_epoch(int world, int64_t batch) const override;
  int64_t size() const { return count_; }

 private:
  DataShape shape_;
  std::string images_path_;
  std::vector<float> images_;
  int64_t count_ = 0;
  std::vector<int32_t> labels_;
  EpochSamplers samplers_;
};

}  // namespace ddpx
