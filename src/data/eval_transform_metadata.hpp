// The eval transform a training run used, recorded with its saved weights so that `ddpx eval --weights W --data D`
// evaluates D the way that run's --val would have.
// Guarantees:
//  - eval_transform_metadata() writes "ddpx.eval_transform" (a JSON object: augment, mean and std where given,
//    max_pixels, dct_scaling, center_crop_fraction: the training data's size / resize) and "ddpx.data" (the
//    training --data's canonical text); read_eval_transform() reads the first back into the settings it came from:
//    write then read gives the same settings (tested).
//  - A file without the key (saved by PyTorch, or by an older ddpx) reads as the defaults, recorded = false; a key
//    that is not such an object is an error naming the file and the key.
#pragma once
#include <filesystem>
#include <string>

#include "data/data_spec.hpp"
#include "data/dataset.hpp"
#include "io/safetensors.hpp"

namespace ddpx {

// center_crop_fraction: the training dataset's (Dataset::center_crop_fraction), recorded where > 0.
TensorMetadata eval_transform_metadata(const ImagePipelineSettings& settings, const DataSpec& trained_on,
                                       double center_crop_fraction);

struct RecordedEvalTransform {
  ImagePipelineSettings settings;  // the defaults where nothing is recorded
  bool recorded = false;
  std::string trained_on;  // "ddpx.data", empty when not recorded
};
RecordedEvalTransform read_eval_transform(const TensorMetadata& metadata, const std::filesystem::path& file);

std::string_view augmentation_name(Augmentation augmentation);  // "auto" | "crop-flip" | "resize"

}  // namespace ddpx
