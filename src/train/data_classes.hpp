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
//    more classes is then refused when the dataset is built, naming a sample, its label and the model's count).
#pragma once
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

}  // namespace ddpx
