// Class names and count from the training data; see data_classes.hpp.
#include "train/data_classes.hpp"

#include <fmt/format.h>

#include <memory>
#include <string_view>

#include "data/data_sources.hpp"
#include "model/model_registry.hpp"
#include "model/spec_overrides.hpp"

namespace ddpx {

bool model_spec_names_classes(const std::string& spec) {
  std::string_view overrides = split_model_spec(spec).overrides;
  while (!overrides.empty()) {
    const size_t comma = overrides.find(',');
    const std::string_view item = overrides.substr(0, comma);
    overrides = comma == std::string_view::npos ? std::string_view{} : overrides.substr(comma + 1);
    if (item.substr(0, item.find('=')) == "classes") return true;
  }
  return false;
}

std::string model_spec_with_classes(const std::string& spec, int64_t classes) {
  if (model_spec_names_classes(spec)) return spec;
  const SplitModelSpec split = split_model_spec(spec);
  return fmt::format("{}:{}{}classes={}", split.base, split.overrides, split.overrides.empty() ? "" : ",", classes);
}

DatasetContext training_data_context(const TrainOptions& options, const Model& model) {
  DatasetContext context;
  context.shape = DataShape{model.input_shape().channels, model.input_shape().image_size, model.num_classes()};
  context.seed = options.seed;
  context.images = options.image_pipeline;
  return context;
}

TrainOptions with_data_classes(const TrainOptions& requested) {
  TrainOptions options = requested;
  if (!requested.data.is_image_source()) return options;
  const std::unique_ptr<SampleSource> source = open_sample_source(requested.data, "--data");
  options.class_names = source->class_names();
  const bool file_decides = !requested.load.empty() && !requested.reset_head;
  if (file_decides || model_spec_names_classes(requested.model)) return options;
  if (make_model(requested.model)->num_classes() != source->num_classes())
    options.model = model_spec_with_classes(requested.model, source->num_classes());
  return options;
}

}  // namespace ddpx
