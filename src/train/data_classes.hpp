// What the training data tells a run before it starts: its class names, and the model's class count when --model
// does not give one.
// Guarantees of with_data_classes():
//  - image sources (idx, folder, pack, wds) are opened once, here; synthetic and npy data are left as they are;
//  - class_names is the source's list (label = index: a folder's sorted class folders, Fashion-MNIST's ten names, a
//    pack's or a wds classes.txt list; data/sample_source.hpp), empty where the source names none; the run report,
//    checkpoints, --save's metadata and --metrics carry it;
//  - a --model without classes= gets the source's class count (vit_b_32 on a folder of 10 classes trains
//    vit_b_32:classes=10, torchvision's fine-tuning recipe: a head of the data's classes), except with --load
//    without --reset-head, where the file's head decides; a --model with classes= is kept as given (a source with
//    more classes is then refused when the dataset is built, naming a sample, its label and the model's count);
//  - --load W without --reset-head, any source: a --model without classes= takes W's class count (the first
//    dimension of its head's weight; a custom shape never becomes 1000 classes silently), and a classes= that
//    differs from W's is refused naming both counts and --reset-head. A file without the model's head is left to
//    the loader, whose error lists what is missing.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/dataset.hpp"
#include "model/model.hpp"
#include "train/train_options.hpp"

namespace ddpx {

TrainOptions with_data_classes(const TrainOptions& requested);
// What the training data is opened with: the model's input shape and class count, --seed, the image pipeline.
DatasetContext training_data_context(const TrainOptions& options, const Model& model);
// The spec with classes=K added, or unchanged when it names classes= already ("vit_b_32" -> "vit_b_32:classes=10",
// "mlp:width=64" -> "mlp:width=64,classes=10").
std::string model_spec_with_classes(const std::string& spec, int64_t classes);
bool model_spec_names_classes(const std::string& spec);
// The class count of a weights file's classifier head for this model's family (the first dimension of its
// head.weight / heads.head.weight); nullopt when the file has no such tensor.
std::optional<int64_t> weights_class_count(const std::string& path, const Model& model);

}  // namespace ddpx
