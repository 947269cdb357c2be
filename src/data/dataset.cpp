// make_dataset: --data synthetic | learnable | npy (--images/--labels).
#include "data/dataset.hpp"

#include "core/error.hpp"
#include "data/npy_dataset.hpp"
#include "data/synthetic_dataset.hpp"

namespace ddpx {

std::unique_ptr<Dataset> make_dataset(const DatasetOptions& options, const DataShape& shape) {
  if (!options.images_path.empty() || options.kind == "npy") {
    DDPX_REQUIRE(!options.images_path.empty() && !options.labels_path.empty(),
                 "--images and --labels must be given together (got --images '{}', --labels '{}')",
                 options.images_path, options.labels_path);
    return std::make_unique<NpyDataset>(options.images_path, options.labels_path, shape);
  }
  if (options.kind == "synthetic") return std::make_unique<SyntheticDataset>(shape, options.seed, false);
  // The CUDA engine generates synthetic-device batches itself; the host only hands over (unused) slots.
  if (options.kind == "synthetic-device") return std::make_unique<DeviceGeneratedDataset>(shape);
  if (options.kind == "learnable") return std::make_unique<SyntheticDataset>(shape, options.seed, true);
  fail("--data '{}' is not known; choose synthetic (the seed's random images), learnable (random images whose "
       "labels a ViT can learn), or give --images X.npy --labels Y.npy",
       options.kind);
}

}  // namespace ddpx
