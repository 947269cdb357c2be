// The registry of model families: the one place model names live. `--model` specs, `ddpx model`, the help texts,
// the errors for unknown names and the bench tools all read it; adding a family is one line in
// model_registry.cpp (and, for a CUDA path, one in model_cuda/cuda_models.cpp).
// Guarantees:
//  - make_model(spec) returns the model of the first family that accepts the spec's name (the part before ':');
//    a name no family accepts is a ddpx::Error listing every known name and each family's custom syntax.
//  - The returned Model's spec() rebuilds the same model (make_model(m->spec()) has the same layout), and a
//    named variant without overrides keeps its name as its spec.
//  - Variant names are unique across families, and every family names a small test_variant among its variants
//    (both checked by tests/model/test_model_registry.cpp).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/model.hpp"
#include "model/model_family.hpp"

namespace ddpx {

// Every registered family, in registry order.
const std::vector<ModelFamily>& model_families();

// Parses --model (or a checkpoint's recorded spec); errors name the spec and list known_model_names(). `classes`:
// the class count the run decided (the training data's, or --load's file's head: train/data_classes.hpp), taken
// where the spec names no classes= (a classes= the spec gives is kept); the returned model's spec() spells it.
std::unique_ptr<Model> make_model(std::string_view spec, std::optional<int64_t> classes = std::nullopt);
// make_model of a spec the user typed after `flag` ("--model"): its errors start with the flag and the spec, so a
// refusal says which flag to change (the train-flag fuzzer's finding: "unknown model 'vit_nope'" named none).
std::unique_ptr<Model> make_model_from_flag(std::string_view flag, std::string_view spec,
                                            std::optional<int64_t> classes = std::nullopt);

// Every family's variant names, in registry order.
std::vector<std::string> known_model_names();

// Whether `ddpx bench` can run the PyTorch anchor for this --model (a family's anchor_variants, no overrides).
bool has_pytorch_anchor(std::string_view spec);

// For help texts and errors: "vit_b_16, ..., vit_small_test, custom:..; mlp_s, ...; mlp:..".
std::string model_names_help();

}  // namespace ddpx
