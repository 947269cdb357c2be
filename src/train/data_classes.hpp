// What the training data tells a run before it starts: its class names, and the model's class count when --model
// does not give one.
// Guarantees of with_data_classes():
//  - it reads the data opened once (train/run_data.hpp) and opens nothing; class_names is the source's list (label
//    = index: a folder's sorted class folders, Fashion-MNIST's ten names, a pack's or a wds classes.txt list;
//    data/sample_source.hpp), empty where the source names none; the run report, checkpoints, --save's metadata
//    and --metrics carry it;
//  - the class count reaches the model as a typed value (TrainOptions::model_classes, model_registry.hpp's
//    make_model(spec, classes)), never as text added to --model: a --model without classes= gets the source's
//    class count (vit_b_32 on a folder of 10 classes trains a head of 10 classes, torchvision's fine-tuning recipe),
//    except with --load without --reset-head, where the file's head decides; a --model with classes= is kept as
//    given (a source with more classes is then refused when the dataset is built, naming a sample, its label and
//    the model's count); model_classes is set only where it differs from the spec's own count;
//  - --load W without --reset-head, any source: a --model without classes= takes W's class count (the first
//    dimension of its head's weight; a custom shape never becomes 1000 classes silently), and a classes= that
//    differs from W's is refused naming both counts and --reset-head. A file without the model's head is left to
//    the loader, whose error lists what is missing.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/dataset.hpp"
#include "model/model.hpp"
#include "train/run_data.hpp"
#include "train/train_options.hpp"

namespace ddpx {

TrainOptions with_data_classes(const TrainOptions& requested, const RunData& data);
// The run's model: --model with the class count with_data_classes() decided; errors name --model.
std::unique_ptr<Model> make_run_model(const TrainOptions& options);
// --model as the run trains it, for records (the run report, the start-up line): the spec with classes=K spelled in
// where the run decided K ("vit_b_32" on 10 classes: "vit_b_32:classes=10"); make_model of it is make_run_model.
std::string trained_model_spec(const TrainOptions& options);
// The spec with classes=K added, or unchanged when it names classes= already ("vit_b_32" -> "vit_b_32:classes=10",
// "mlp:width=64" -> "mlp:width=64,classes=10"): the spelling trained_model_spec() records.
std::string model_spec_with_classes(const std::string& spec, int64_t classes);
bool model_spec_names_classes(const std::string& spec);
// The class count of a weights file's classifier head for this model's family (the first dimension of its
// head.weight / heads.head.weight); nullopt when the file has no such tensor.
std::optional<int64_t> weights_class_count(const std::string& path, const Model& model);

}  // namespace ddpx
