// NpyDataset: batches taken in order from an images .npy ([N, C, H, W] float32) and a labels .npy ([N] int32/int64).
// Guarantee: rank r of `world` at step s gets samples (s*world + r)*batch ... +batch-1, wrapping around N, so one
// step on a known batch is reproducible and ranks see disjoint samples while N allows. Shapes are checked against
// the model at construction (errors name the file, its shape and the model's expectation).
#pragma once
#include <string>
#include <vector>

#include "data/dataset.hpp"

namespace ddpx {

class NpyDataset : public Dataset {
 public:
  NpyDataset(const std::string& images_path, const std::string& labels_path, const DataShape& shape);
  std::string describe() const override;
  const DataShape& shape() const override { return shape_; }
  void fill_batch(int64_t step, int rank, int world, int64_t batch, float* images, int32_t* labels) const override;
  int64_t size() const { return count_; }

 private:
  DataShape shape_;
  std::string images_path_;
  int64_t count_ = 0;
  std::vector<float> images_;
  std::vector<int32_t> labels_;
};

}  // namespace ddpx
