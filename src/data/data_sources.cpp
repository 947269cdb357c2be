// The data-source registry's rows; see data_sources.hpp.
#include "data/data_sources.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>

#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "data/folder_source.hpp"
#include "data/idx_source.hpp"
#include "data/image_dataset.hpp"
#include "data/npy_dataset.hpp"
#include "data/pack_source.hpp"
#include "data/synthetic_dataset.hpp"
#include "data/wds_source.hpp"

namespace ddpx {
namespace {

std::unique_ptr<Dataset> make_synthetic(const DataSpec&, const DatasetContext& context) {
  return std::make_unique<SyntheticDataset>(context.shape, context.seed, false);
}
std::unique_ptr<Dataset> make_learnable(const DataSpec&, const DatasetContext& context) {
  return std::make_unique<SyntheticDataset>(context.shape, context.seed, true);
}
// The CUDA engine generates synthetic-device batches itself; the host only hands over (unused) slots.
std::unique_ptr<Dataset> make_device_generated(const DataSpec&, const DatasetContext& context) {
  return std::make_unique<DeviceGeneratedDataset>(context.shape);
}
std::unique_ptr<Dataset> make_npy(const DataSpec& spec, const DatasetContext& context) {
  DDPX_REQUIRE(!spec.images.empty() && !spec.labels.empty(),
               "--images and --labels must be given together (got --images '{}', --labels '{}')", spec.images,
               spec.labels);
  DDPX_REQUIRE(context.repeated_augment <= 1,
               "--repeated-augment {}: --images {} is read in order, unshuffled and unaugmented; repeated augmentation "
               "needs an image source (idx:, folder:, pack:)", context.repeated_augment, spec.images);
  return std::make_unique<NpyDataset>(spec.images, spec.labels, context.shape);
}
std::unique_ptr<SampleSource> open_idx(const DataSpec& spec) {
  return std::make_unique<IdxSource>(spec.location, spec.split, spec.origin);
}
std::unique_ptr<SampleSource> open_folder(const DataSpec& spec) {
  return std::make_unique<FolderSource>(spec.location, spec.origin);
}
std::unique_ptr<SampleSource> open_pack(const DataSpec& spec) {
  return std::make_unique<PackSource>(spec.location, spec.origin);
}
std::unique_ptr<SampleSource> open_wds(const DataSpec& spec) {
  return std::make_unique<WdsSource>(spec.location, spec.origin);
}

// Note [Data opened once]
// A command opens each source it is given once: `ddpx train` opens --data and --val in train/run_data.cpp, `ddpx
// eval` its --data, `ddpx pack`, data-preview and data-bench their SOURCE, each into one OpenedData (or one
// SampleSource) that everything after reads: the class names and count the model's head takes, the run's length
// in epochs, the datasets the loader and the evaluator read, the fingerprint a checkpoint records and --resume
// compares, the files no output may overwrite. Opening is not free (a folder is listed, idx files are read whole,
// every shard's headers are read) and the answers of two opens could differ (a file added in between). The
// counter below counts the opens per origin; tests/train/test_data_opens.cpp holds a train run with --data and --val
// to one each.
constexpr size_t kOrigins = static_cast<size_t>(DataOrigin::bench_source) + 1;
std::array<std::atomic<int64_t>, kOrigins>& open_counts() {
  static std::array<std::atomic<int64_t>, kOrigins> counts{};
  return counts;
}
void count_open(DataOrigin origin) { ++open_counts()[static_cast<size_t>(origin)]; }

}  // namespace

const std::vector<DataSourceRow>& data_source_rows() {
  static const std::vector<DataSourceRow> rows = {
      {DataSource::synthetic, "synthetic", "synthetic", "normal random images, random labels", false,
       make_synthetic, nullptr},
      {DataSource::learnable, "learnable", "learnable", "random images whose labels a ViT can learn, for convergence "
       "checks", false, make_learnable, nullptr},
      {DataSource::synthetic_device, "synthetic-device", "synthetic-device",
       "generated on the GPU, to separate input cost (--device cuda)", false, make_device_generated, nullptr},
      {DataSource::npy, "npy", "npy", "float32 .npy arrays from --images and --labels, taken in order, in epochs", false,
       make_npy, nullptr},
      {DataSource::idx, "idx", "idx:DIR[:train|test]",
       "MNIST/Fashion-MNIST idx files (train-* or t10k-*, .gz too) in DIR, e.g. "
       "idx:/usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist); shuffled per epoch, resized to the "
       "model's input", true, nullptr, open_idx},
      {DataSource::folder, "folder", "folder:DIR",
       "torchvision's ImageFolder layout (DIR/CLASS/*.jpg|jpeg|png, classes sorted), JPEG and PNG, gray and CMYK "
       "made RGB; RandomResizedCrop + flip for training, resize + center crop for --val", true, nullptr, open_folder},
      {DataSource::pack, "pack", "pack:FILE",
       "a file `ddpx pack` wrote (images pre-resized, raw or JPEG, read with pread, checksummed; layout in "
       "docs/pack-format.md)", true, nullptr, open_pack},
      {DataSource::wds, "wds", "wds:SHARDS",
       "WebDataset tar shards, braces expanded (wds:/d/train-{000000..000127}.tar), samples KEY.jpg|jpeg|png with "
       "KEY.cls; each epoch streams the shards in a shuffled order, front to back, through a --shuffle-buffer of "
       "samples (WebDataset's shuffle(n)); classes.txt beside the shards names the classes", true, nullptr, open_wds},
  };
  return rows;
}

const DataSourceRow& data_source_row(DataSource source) {
  for (const DataSourceRow& row : data_source_rows())
    if (row.source == source) return row;
  DDPX_INTERNAL_FAIL("data source {} has no registry row", static_cast<int>(source));
}

std::string data_sources_help() {
  std::string out;
  for (const DataSourceRow& row : data_source_rows())
    out += fmt::format("{}{} ({})", out.empty() ? "" : " | ", row.syntax, row.help);
  return out;
}

std::string data_fingerprint(const SampleSource& source) {
  return fmt::format("{} samples, {} classes, contents {:016x}", source.size(), source.num_classes(),
                     source.content_hash());
}

int64_t data_opens(DataOrigin origin) { return open_counts()[static_cast<size_t>(origin)].load(); }

std::unique_ptr<SampleSource> open_sample_source(const DataSpec& spec) {
  const DataSourceRow& row = data_source_row(spec.source);
  DDPX_REQUIRE(row.open != nullptr, "{}: not an image source (those are idx:, folder:, pack:, wds:)",
               spec.as_typed());
  count_open(spec.origin);
  return row.open(spec);
}

OpenedData open_data(const DataSpec& spec) {
  OpenedData data;
  data.spec = spec;
  if (data_source_row(spec.source).open == nullptr) return data;  // synthetic, npy: made with the model's shape
  data.samples = open_sample_source(spec);
  const SampleSource& source = *data.samples;
  data.class_names = source.class_names();
  data.num_classes = source.num_classes();
  data.size = source.size();
  data.fingerprint = data_fingerprint(source);
  for (FileRole role : source.inputs()) {
    role.flag = spec.as_typed();
    data.inputs.push_back(std::move(role));
  }
  return data;
}

std::unique_ptr<Dataset> make_dataset(const OpenedData& data, const DatasetContext& context) {
  if (data.samples) return std::make_unique<ImageDataset>(data.samples, context, data.spec.as_typed());
  const DataSourceRow& row = data_source_row(data.spec.source);
  DDPX_INTERNAL_ASSERT(row.make != nullptr, "data source {} was not opened", data.spec.text());
  count_open(data.spec.origin);
  return row.make(data.spec, context);
}

std::unique_ptr<Dataset> make_val_dataset(const OpenedData& val, const Dataset& train, const DataSpec& train_spec,
                                          DatasetContext context) {
  context.training = false;
  std::unique_ptr<Dataset> dataset = make_dataset(val, context);
  const std::vector<std::string> train_classes = train.class_names(), val_classes = dataset->class_names();
  if (!train_classes.empty() && !val_classes.empty() && train_classes != val_classes) {
    std::string only_train, only_val;
    for (const std::string& name : train_classes)
      if (std::find(val_classes.begin(), val_classes.end(), name) == val_classes.end()) only_train += " " + name;
    for (const std::string& name : val_classes)
      if (std::find(train_classes.begin(), train_classes.end(), name) == train_classes.end()) only_val += " " + name;
    fail("--val {} has other classes than --data {} ({} vs {}; only in --data:{}; only in --val:{}): labels are class "
         "indices, so they would not mean the same; give both the same class folders", val.spec.text(), train_spec.text(),
         val_classes.size(), train_classes.size(), only_train.empty() ? " none" : only_train,
         only_val.empty() ? " none (same names, another order)" : only_val);
  }
  return dataset;
}

std::unique_ptr<Dataset> make_dataset(const DataSpec& spec, const DatasetContext& context) {
  return make_dataset(open_data(spec), context);
}

}  // namespace ddpx
