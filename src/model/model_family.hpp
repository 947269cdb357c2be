// ModelFamily: one row of the model registry (model/model_registry.hpp), in its own header so that a family's
// files (model/<family>/<family>_model.hpp) name their row without including the registry, and the registry
// includes its rows without a loop between them.
// Guarantee: accepts(name) is true exactly for custom_name and the names in variants.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/model.hpp"

namespace ddpx {

struct ModelFamily {
  std::string name;                   // "vit"
  std::string summary;                // one line: what the family is
  std::vector<std::string> variants;  // the named shapes, e.g. vit_b_16
  std::string custom_syntax;          // how to spell an unnamed shape, e.g. "mlp:image=..,layers=..,width=.."
  std::vector<std::string> anchor_variants;  // the variants bench/pt_vit_anchor.py builds in PyTorch (`ddpx bench`)
  // The family's small shape (one of `variants`) that the trainer's family-independent tests train on every family
  // (tests/train/test_family_properties*.cpp): a few steps on one CPU core in well under a second.
  std::string test_variant;
  std::string custom_name;  // the spec name of an unnamed shape ("custom" for the ViT, "mlp")
  // Throws ddpx::Error naming the spec. `classes`: the head's class count where the spec names no classes= (a
  // classes= in the spec wins); nullopt: the variant's own.
  std::unique_ptr<Model> (*parse)(std::string_view spec, std::optional<int64_t> classes) = nullptr;

  // Whether the spec's name (before ':') belongs to this family: its custom name or one of its variants.
  bool accepts(std::string_view name) const;
};

// The registry's parse of a family whose Model is built from the config its spec parser returns:
// `.parse = &parse_family_spec<MlpModel, &parse_mlp_spec>`. Whatever `parse` takes after the spec (deduced from
// its type) is passed on to the spec parser.
template <typename FamilyModel, auto parse_config, typename... Rest>
std::unique_ptr<Model> parse_family_spec(std::string_view spec, Rest... rest) {
  return std::make_unique<FamilyModel>(parse_config(spec, rest...));
}

}  // namespace ddpx
