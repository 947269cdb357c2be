// The training run's data, opened once; see run_data.hpp.
#include "train/run_data.hpp"

namespace ddpx {

RunData open_run_data(const TrainOptions& options) {
  // In a training run --data and --val are these flags, however the options were filled (a test, a --config).
  DataSpec train = options.data;
  train.origin = DataOrigin::train_data;
  RunData data{.train = open_data(train), .val = std::nullopt};
  if (options.val) {
    DataSpec val = *options.val;
    val.origin = DataOrigin::train_val;
    data.val = open_data(val);
  }
  return data;
}

DatasetContext training_data_context(const TrainOptions& options, const Model& model) {
  DatasetContext context;
  context.shape = DataShape{model.input_shape().channels, model.input_shape().image_size, model.num_classes()};
  context.seed = options.seed;
  context.images = options.image_pipeline;
  context.repeated_augment = options.repeated_augment;
  return context;
}

RunDatasets make_run_datasets(const RunData& data, const TrainOptions& options, const Model& model) {
  RunDatasets datasets;
  datasets.train = make_dataset(data.train, training_data_context(options, model));
  if (data.val)
    datasets.val = make_val_dataset(*data.val, *datasets.train, data.train.spec, training_data_context(options, model));
  return datasets;
}

}  // namespace ddpx
