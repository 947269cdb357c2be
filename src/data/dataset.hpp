// Dataset: where training batches come from.
// Guarantee: fill_batch(step, rank, ...) is a pure function of (dataset seed, step, rank): any thread may fill any
// batch in any order, two runs with the same seed see identical data, and a resumed run continues with exactly the
// batches an uninterrupted run would have seen. Ranks see disjoint data (DistributedSampler-like).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

namespace ddpx {

struct DataShape {
  int64_t channels = 3, image_size = 224, num_classes = 1000;
  int64_t image_numel() const { return channels * image_size * image_size; }
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual std::string describe() const = 0;
  virtual const DataShape& shape() const = 0;
  // Writes `batch` images (NCHW float32) and labels for global step `step` as seen by `rank` of `world`.
  virtual void fill_batch(int64_t step, int rank, int world, int64_t batch, float* images, int32_t* labels) const = 0;
};

struct DatasetOptions {
  std::string kind = "synthetic";  // synthetic | learnable | npy
  std::string images_path, labels_path;
  uint64_t seed = 0;
};

// Builds the dataset --data names; errors name --data / --images / --labels and the problem.
std::unique_ptr<Dataset> make_dataset(const DatasetOptions& options, const DataShape& shape);

}  // namespace ddpx
