// MlpConfig: the shape of an MLP classifier over flattened images, its named shapes and its spec parser.
// The model: x = flatten(image) [C*H*W]; `layers` hidden Linear layers of `width` each followed by exact (erf)
// GELU; a Linear head to `classes` logits. Named shapes (sizes chosen to cover the cases that matter for DDP):
//   mlp_tiny_test  16x16x3 -> 2 x 32   -> 10     (26 K parameters: unit, fixture and multi-rank tests; the same
//                                                 input shape as vit_tiny_test, so the same data files work)
//   mlp_s          32x32x3 -> 2 x 1024 -> 10     (4.2 M: CIFAR-10 shaped, a quick CPU or GPU run)
//   mlp_l        224x224x3 -> 3 x 2048 -> 1000   (319 M: ImageNet shaped; little compute per parameter, so
//                                                 data-parallel training is bound by the gradient all-reduce)
// Guarantee: a config returned by parse_mlp_spec() has passed validate(): every size positive and at most 2^24,
// an input of at most 2^31 features, at most 2^36 parameters. Errors name the value and the spec.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddpx {

struct MlpConfig {
  std::string name = "mlp";
  int64_t image_size = 32;
  int64_t channels = 3;
  int64_t num_layers = 2;  // hidden layers
  int64_t width = 1024;    // of every hidden layer
  int64_t num_classes = 10;

  int64_t in_features() const { return channels * image_size * image_size; }
  // Inputs of hidden layer l (l = num_layers: the head).
  int64_t layer_in(int64_t l) const { return l == 0 ? in_features() : width; }

  void validate() const;
  // "mlp_s", or "mlp:image=32,channels=3,layers=2,width=1024,classes=10" when not a named shape.
  std::string spec() const;
  bool operator==(const MlpConfig&) const = default;
};

// A named shape (mlp_tiny_test, mlp_s, mlp_l), optionally followed by ":key=value,..." overrides, or
// "mlp:key=value,..." (defaults: mlp_s's). Keys: image, channels, layers, width, classes.
// `classes`: the head's class count where the spec names no classes= (model_registry.hpp's make_model).
MlpConfig parse_mlp_spec(std::string_view spec, std::optional<int64_t> classes = std::nullopt);

// The named shapes, for the registry.
std::vector<std::string> mlp_model_names();

}  // namespace ddpx
