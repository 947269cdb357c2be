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

// --load W without --reset-head: W's head decides the class count; a classes= that --model gives must agree.
std::optional<int64_t> loaded_weights_classes(const TrainOptions& options) {
  const std::unique_ptr<Model> model = make_model(options.model);
  const std::optional<int64_t> file_classes = weights_class_count(options.load, *model);
  if (!file_classes || *file_classes == model->num_classes()) return std::nullopt;
  DDPX_REQUIRE(!model_spec_names_classes(options.model),
               "--model {} has {} classes but --load {} holds a classifier head of {} classes; give classes={} (or no "
               "classes=: the file decides), or add --reset-head to train a new head of {} classes on the file's "
               "other weights", options.model, model->num_classes(), options.load, *file_classes, *file_classes,
               model->num_classes());
  return file_classes;
}

TrainOptions with_data_classes(const TrainOptions& requested, const RunData& data) {
  TrainOptions options = requested;
  options.model_classes = std::nullopt;
  options.class_names = data.train.class_names;
  options.data_fingerprint = data.train.fingerprint;
  options.data_inputs = data.train.inputs;
  if (data.val) options.data_inputs.insert(options.data_inputs.end(), data.val->inputs.begin(), data.val->inputs.end());
  const bool file_decides = !requested.load.empty() && !requested.reset_head;
  if (file_decides) {
    if (std::filesystem::is_regular_file(requested.load)) options.model_classes = loaded_weights_classes(requested);
    return options;
  }
  if (data.train.num_classes == 0 || model_spec_names_classes(requested.model)) return options;
  if (make_model(requested.model)->num_classes() != data.train.num_classes)
    options.model_classes = data.train.num_classes;
  return options;
}

std::unique_ptr<Model> make_run_model(const TrainOptions& options) {
  return make_model_from_flag("--model", options.model, options.model_classes);
}

std::string trained_model_spec(const TrainOptions& options) {
  return options.model_classes ? model_spec_with_classes(options.model, *options.model_classes) : options.model;
}

}  // namespace ddpx
