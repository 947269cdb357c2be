// torchvision's ViT initialization and a test initialization (see vit_init.hpp for the guarantees).
// The torchvision rules, from torchvision/models/vision_transformer.py and torch.nn defaults:
//   conv_proj.weight       trunc_normal(std = sqrt(1 / (C*P*P)), bounds [-2, 2] absolute, torch's defaults)
//   conv_proj.bias         0
//   class_token            0
//   encoder.pos_embedding  normal(std = 0.02)
//   in_proj_weight         xavier_uniform over [3D, D]  (nn.MultiheadAttention._reset_parameters)
//   in_proj_bias           0
//   out_proj.weight        nn.Linear default: kaiming_uniform(a = sqrt(5)) == U(-1/sqrt(D), 1/sqrt(D))
//   out_proj.bias          0 (reset by MultiheadAttention)
//   mlp.0 / mlp.3 weight   xavier_uniform; bias normal(std = 1e-6)  (MLPBlock)
//   LayerNorm              weight 1, bias 0
//   heads.head             weight 0, bias 0
#include "model/vit/vit_init.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "core/error.hpp"
#include "core/fnv1a.hpp"
#include "core/internal_assert.hpp"
#include "core/rng.hpp"

namespace ddpx {
namespace {

Rng tensor_rng(uint64_t seed, const TensorSlot& slot) { return Rng(seed ^ fnv1a(slot.name)); }

void fill(float* values, const TensorSlot& slot, float value) { std::fill(values, values + slot.numel, value); }

void fill_uniform(float* values, const TensorSlot& slot, Rng& rng, double bound) {
  for (size_t i = 0; i < slot.numel; ++i) values[i] = static_cast<float>(rng.uniform(-bound, bound));
}

void fill_normal(float* values, const TensorSlot& slot, Rng& rng, double mean, double std) {
  for (size_t i = 0; i < slot.numel; ++i) values[i] = static_cast<float>(mean + std * rng.normal());
}

// torch.nn.init.xavier_uniform_ on a 2-D [fan_out, fan_in] weight.
void fill_xavier_uniform(float* values, const TensorSlot& slot, Rng& rng) {
  const double fan_out = static_cast<double>(slot.shape.at(0)), fan_in = static_cast<double>(slot.shape.at(1));
  fill_uniform(values, slot, rng, std::sqrt(6.0 / (fan_in + fan_out)));
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

bool is_layer_norm(std::string_view name) {
  return name.starts_with("encoder.ln.") || name.find(".ln_1.") != std::string_view::npos ||
         name.find(".ln_2.") != std::string_view::npos;
}

void init_torchvision_tensor(const VitLayout& layout, const TensorSlot& slot, float* values, Rng& rng) {
  const std::string_view name = slot.name;
  const VitConfig& c = layout.config();
  if (name == "conv_proj.weight") {
    const double std = std::sqrt(1.0 / static_cast<double>(c.patch_dim()));
    for (size_t i = 0; i < slot.numel; ++i) values[i] = static_cast<float>(rng.truncated_normal(0.0, std, -2.0, 2.0));
  } else if (name == "encoder.pos_embedding") {
    fill_normal(values, slot, rng, 0.0, 0.02);
  } else if (name == "conv_proj.bias" || name == "class_token" || name.starts_with("heads.head.") ||
             ends_with(name, ".in_proj_bias") || ends_with(name, ".out_proj.bias")) {
    fill(values, slot, 0.0f);
  } else if (is_layer_norm(name)) {
    fill(values, slot, ends_with(name, ".weight") ? 1.0f : 0.0f);
  } else if (ends_with(name, ".in_proj_weight") || ends_with(name, ".mlp.0.weight") ||
             ends_with(name, ".mlp.3.weight")) {
    fill_xavier_uniform(values, slot, rng);
  } else if (ends_with(name, ".out_proj.weight")) {
    fill_uniform(values, slot, rng, 1.0 / std::sqrt(static_cast<double>(slot.shape.at(1))));
  } else if (ends_with(name, ".mlp.0.bias") || ends_with(name, ".mlp.3.bias")) {
    fill_normal(values, slot, rng, 0.0, 1e-6);
  } else {
    DDPX_INTERNAL_FAIL("init_vit_params: no torchvision initialization rule for tensor '{}' of model '{}'; add one "
                       "in src/model/vit/vit_init.cpp", name, c.name);
  }
}

}  // namespace

void init_vit_params(const VitLayout& layout, float* params, uint64_t seed) {
  std::fill(params, params + layout.buffer_size(), 0.0f);
  for (const TensorSlot& slot : layout.tensors()) {
    Rng rng = tensor_rng(seed, slot);
    init_torchvision_tensor(layout, slot, params + slot.offset, rng);
  }
}

void init_vit_params_random(const VitLayout& layout, float* params, uint64_t seed, float scale) {
  DDPX_INTERNAL_ASSERT(scale > 0, "init_vit_params_random: scale must be positive, got {}", scale);
  std::fill(params, params + layout.buffer_size(), 0.0f);
  for (const TensorSlot& slot : layout.tensors()) {
    Rng rng = tensor_rng(seed, slot);
    const bool norm_weight = is_layer_norm(slot.name) && ends_with(slot.name, ".weight");
    fill_normal(params + slot.offset, slot, rng, norm_weight ? 1.0 : 0.0, scale);
  }
}

}  // namespace ddpx
