// The model registry (see model_registry.hpp for the guarantees). One line per family below.
#include "model/model_registry.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "model/mlp/mlp_model.hpp"
#include "model/vit/vit_model.hpp"

namespace ddpx {

bool ModelFamily::accepts(std::string_view name) const {
  return name == custom_name || std::find(variants.begin(), variants.end(), name) != variants.end();
}

const std::vector<ModelFamily>& model_families() {
  static const std::vector<ModelFamily> families = {
      vit_family(),
      mlp_family(),
  };
  return families;
}

std::unique_ptr<Model> make_model(std::string_view spec, std::optional<int64_t> classes) {
  const std::string_view name = spec.substr(0, spec.find(':'));
  for (const ModelFamily& family : model_families())
    if (family.accepts(name)) return family.parse(spec, classes);
  fail("unknown model '{}'; known models: {}", name, model_names_help());
}

std::unique_ptr<Model> make_model_from_flag(std::string_view flag, std::string_view spec,
                                            std::optional<int64_t> classes) {
  try {
    return make_model(spec, classes);
  } catch (const Error& error) {
    fail("{} {}: {}", flag, spec, error.what());
  }
}

std::vector<std::string> known_model_names() {
  std::vector<std::string> names;
  for (const ModelFamily& family : model_families())
    names.insert(names.end(), family.variants.begin(), family.variants.end());
  return names;
}

bool has_pytorch_anchor(std::string_view spec) {
  for (const ModelFamily& family : model_families())
    for (const std::string& name : family.anchor_variants)
      if (name == spec) return true;
  return false;
}

std::string model_names_help() {
  std::vector<std::string> parts;
  for (const ModelFamily& family : model_families())
    parts.push_back(fmt::format("{} (or {})", fmt::join(family.variants, ", "), family.custom_syntax));
  return fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace ddpx
