// The seed's synthetic data (normal random images, uniform random labels) and a learnable variant.
// Guarantee: values come from a counter-based hash of (seed, step, rank, element index), so they are identical
// whichever thread produces them. "learnable": each class has a fixed prototype image; an image is
// 0.5 * prototype[label] + noise, so a ViT's loss falls clearly within a few hundred steps.
#pragma once
#include <vector>

#include "data/dataset.hpp"

namespace ddpx {

class SyntheticDataset : public Dataset {
 public:
  SyntheticDataset(const DataShape& shape, uint64_t seed, bool learnable);
  std::string describe() const override;
  const DataShape& shape() const override { return shape_; }
  void fill_batch(int64_t step, int rank, int world, int64_t batch, float* images, int32_t* labels) const override;

 private:
  DataShape shape_;
  uint64_t seed_;
  bool learnable_;
  std::vector<float> prototypes_;  // [classes, image_numel] when learnable
};

// Placeholder batches for --data synthetic-device: the GPU engine writes images and labels itself, so the host
// fills nothing (the loader's cost disappears from the step, which is the point of that mode).
class DeviceGeneratedDataset : public Dataset {
 public:
  explicit DeviceGeneratedDataset(const DataShape& shape) : shape_(shape) {}
  std::string describe() const override { return "synthetic, generated on the GPU"; }
  const DataShape& shape() const override { return shape_; }
  void fill_batch(int64_t, int, int, int64_t, float*, int32_t*) const override {}

 private:
  DataShape shape_;
};

// Fills out[0..n) with standard normal values derived from (key, index); deterministic and thread-safe.
void fill_hashed_normal(uint64_t key, float* out, int64_t n);

}  // namespace ddpx
