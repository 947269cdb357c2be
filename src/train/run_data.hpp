// RunData: a training run's data, each source opened once (Note [Data opened once], data/data_sources.cpp), and the
// datasets made from it.
// Guarantees:
//  - open_run_data() is the only place `ddpx train` opens its data: --data once, --val once (per rank: every rank
//    runs run_training). The class names and count (train/data_classes.hpp), the run's length in epochs
//    (train/run_plan.hpp), the fingerprint a checkpoint records and --resume compares, the files no output may
//    overwrite, the loader's and the evaluator's datasets all read this value.
//  - Errors name the flag the user typed (--data, --val; --images/--labels for .npy files).
//  - make_run_datasets() opens nothing again: image sources are wrapped (the training transform for --data, the
//    eval transform for --val), npy files are read once, there; --val's class names are checked against --data's.
#pragma once
#include <memory>
#include <optional>

#include "data/data_sources.hpp"
#include "data/dataset.hpp"
#include "model/model.hpp"
#include "train/train_options.hpp"

namespace ddpx {

struct RunData {
  OpenedData train;               // --data (or --images/--labels)
  std::optional<OpenedData> val;  // --val
};

RunData open_run_data(const TrainOptions& options);

struct RunDatasets {
  std::unique_ptr<Dataset> train;
  std::unique_ptr<Dataset> val;  // null without --val
};

// What the training data is opened with: the model's input shape and class count, --seed, the image pipeline.
DatasetContext training_data_context(const TrainOptions& options, const Model& model);
RunDatasets make_run_datasets(const RunData& data, const TrainOptions& options, const Model& model);

}  // namespace ddpx
