// Class names and count from the training data; see data_classes.hpp.
#include "train/data_classes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>

#include "core/error.hpp"
#include "data/data_sources.hpp"
#include "io/safetensors.hpp"
#include "model/classifier_head.hpp"
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
  context.repeated_augment = options.repeated_augment;
  return context;
}

std::optional<int64_t> weights_class_count(const std::string& path, const Model& model) {
  const FlatLayout& layout = model.layout();
  const auto head = std::find_if(layout.tensors().begin(), layout.tensors().end(), [](const TensorSlot& slot) {
    return is_classifier_head(slot.name) && slot.name.ends_with(".weight");
  });
  if (head == layout.tensors().end()) return std::nullopt;
  const SafetensorsReader reader(path);
  const SafetensorsEntry* entry = reader.find(head->name);
  if (entry == nullptr || entry->shape.size() != head->shape.size() || entry->shape.empty()) return std::nullopt;
  return entry->shape.front();  // [classes, features]
}

std::string model_for_loaded_weights(const TrainOptions& options) {
  const std::unique_ptr<Model> model = make_model(options.model);
  const std::optional<int64_t> file_classes = weights_class_count(options.load, *model);
  if (!file_classes || *file_classes == model->num_classes()) return options.model;
  DDPX_REQUIRE(!model_spec_names_classes(options.model),
               "--model {} has {} classes but --load {} holds a classifier head of {} classes; give classes={} (or no "
               "classes=: the file decides), or add --reset-head to train a new head of {} classes on the file's "
               "other weights", options.model, model->num_classes(), options.load, *file_classes, *file_classes,
               model->num_classes());
  return model_spec_with_classes(options.model, *file_classes);
}

TrainOptions with_data_classes(const TrainOptions& requested) {
  TrainOptions options = requested;
  const bool file_decides = !requested.load.empty() && !requested.reset_head;
  // --load W without --reset-head: W's head decides the class count (checked against a classes= that --model gives).
  if (file_decides && std::filesystem::is_regular_file(requested.load))
    options.model = model_for_loaded_weights(requested);
  if (!requested.data.is_image_source()) return options;
  const std::unique_ptr<SampleSource> source = open_sample_source(requested.data, "--data");
  options.class_names = source->class_names();
  options.data_inputs = source->inputs();
  options.data_fingerprint = data_fingerprint(*source);
  if (requested.val && requested.val->is_image_source())
    for (FileRole role : open_sample_source(*requested.val, "--val")->inputs()) {
      role.flag = "--val " + requested.val->text();
      options.data_inputs.push_back(std::move(role));
    }
  if (file_decides || model_spec_names_classes(requested.model)) return options;
  if (make_model(requested.model)->num_classes() != source->num_classes())
    options.model = model_spec_with_classes(requested.model, source->num_classes());
  return options;
}

}  // namespace ddpx
