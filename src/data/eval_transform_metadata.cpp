// The eval transform in a weights file's metadata; see eval_transform_metadata.hpp.
#include "data/eval_transform_metadata.hpp"

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_parse.hpp"

namespace ddpx {

std::string_view augmentation_name(Augmentation augmentation) {
  switch (augmentation) {
    case Augmentation::automatic: return "auto";
    case Augmentation::crop_flip: return "crop-flip";
    case Augmentation::resize: return "resize";
  }
  return "auto";
}

TensorMetadata eval_transform_metadata(const ImagePipelineSettings& settings, const DataSpec& trained_on,
                                       double center_crop_fraction) {
  nlohmann::json transform = {{"augment", augmentation_name(settings.augmentation)},
                              {"max_pixels", settings.max_pixels},
                              {"dct_scaling", settings.dct_scaling}};
  if (!settings.normalization.mean.empty()) transform["mean"] = settings.normalization.mean;
  if (!settings.normalization.std.empty()) transform["std"] = settings.normalization.std;
  if (center_crop_fraction > 0) transform["center_crop_fraction"] = center_crop_fraction;
  return {{"ddpx.eval_transform", transform.dump()}, {"ddpx.data", trained_on.text()}};
}

RecordedEvalTransform read_eval_transform(const TensorMetadata& metadata, const std::filesystem::path& file) {
  RecordedEvalTransform out;
  if (const auto data = metadata.find("ddpx.data"); data != metadata.end()) out.trained_on = data->second;
  const auto found = metadata.find("ddpx.eval_transform");
  if (found == metadata.end()) return out;
  const std::string what = "--weights " + file.string() + ": metadata 'ddpx.eval_transform'";
  const auto refuse = [&](const std::string& why) {
    fail("{} {}; give the transform with --augment, --mean and --std, or re-save the weights with this ddpx", what,
         why);
  };
  nlohmann::json transform;
  try {
    transform = parse_json(found->second, what);
  } catch (const nlohmann::json::exception& e) {
    refuse(std::string("is not JSON (") + e.what() + ")");
  }
  if (!transform.is_object()) refuse("is not a JSON object");
  try {
    if (transform.contains("augment"))
      out.settings.augmentation = parse_augmentation(transform["augment"].get<std::string>());
    if (transform.contains("mean")) out.settings.normalization.mean = transform["mean"].get<std::vector<float>>();
    if (transform.contains("std")) out.settings.normalization.std = transform["std"].get<std::vector<float>>();
    if (transform.contains("max_pixels")) out.settings.max_pixels = transform["max_pixels"].get<int64_t>();
    if (transform.contains("dct_scaling")) out.settings.dct_scaling = transform["dct_scaling"].get<bool>();
    if (transform.contains("center_crop_fraction"))
      out.settings.center_crop_fraction = transform["center_crop_fraction"].get<double>();
  } catch (const nlohmann::json::exception& e) {
    refuse(std::string("holds a value of the wrong type (") + e.what() + ")");
  }
  out.recorded = true;
  return out;
}

}  // namespace ddpx
