// VitConfig: the shape of a Vision Transformer, torchvision's named shapes and custom ones.
// Guarantee: a VitConfig returned by parse_vit_spec() has passed validate(): every size is positive and at most
// 2^24, the image divides into patches (at most 2^20 tokens) and the hidden width into heads, and the model has at
// most 2^36 parameters, so no count derived from it overflows. Errors name the value and the model spec.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddpx {

struct VitConfig {
  std::string name = "custom";
  int64_t image_size = 224;
  int64_t patch_size = 16;
  int64_t channels = 3;
  int64_t num_layers = 12;
  int64_t num_heads = 12;
  int64_t hidden_dim = 768;
  int64_t mlp_dim = 3072;
  int64_t num_classes = 1000;
  double layer_norm_eps = 1e-6;

  int64_t patches_per_side() const { return image_size / patch_size; }
  int64_t num_patches() const { return patches_per_side() * patches_per_side(); }
  int64_t seq_len() const { return num_patches() + 1; }  // + class token
  int64_t head_dim() const { return hidden_dim / num_heads; }
  int64_t patch_dim() const { return channels * patch_size * patch_size; }
  int64_t image_numel() const { return channels * image_size * image_size; }

  // Throws ddpx::Error naming the offending field and value.
  void validate() const;
  // "vit_l_32" or "custom:image=32,patch=8,layers=2,hidden=64,heads=4,mlp=128,classes=10".
  std::string spec() const;
  bool operator==(const VitConfig&) const = default;
};

// Accepts a torchvision name (vit_b_16, vit_b_32, vit_l_16, vit_l_32, vit_h_14), a test shape (vit_tiny_test,
// vit_small_test), or either followed by ":key=value,..." overrides, or "custom:key=value,...". Keys: image,
// patch, channels, layers, heads, hidden, mlp, classes.
// `classes`: the head's class count where the spec names no classes= (model_registry.hpp's make_model).
VitConfig parse_vit_spec(std::string_view spec, std::optional<int64_t> classes = std::nullopt);

// Names accepted by parse_vit_spec() without overrides: the ViT family's variants in the model registry.
std::vector<std::string> vit_model_names();

}  // namespace ddpx
