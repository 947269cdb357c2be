// Builds the backward-ordered flat layout of a ViT's parameters (see vit_layout.hpp for the guarantees).
#include "model/vit/vit_layout.hpp"

#include <fmt/format.h>

namespace ddpx {

namespace {
const VitConfig& validated(const VitConfig& config) {
  config.validate();
  return config;
}
}  // namespace

VitLayout::VitLayout(const VitConfig& config) : FlatLayout(validated(config).spec()), config_(config) {
  const int64_t D = config.hidden_dim, M = config.mlp_dim, C = config.num_classes;
  head_weight = add("heads.head.weight", {C, D});
  head_bias = add("heads.head.bias", {C});
  final_ln_weight = add("encoder.ln.weight", {D});
  final_ln_bias = add("encoder.ln.bias", {D});
  head_end = close_span();
  blocks.resize(static_cast<size_t>(config.num_layers));
  for (int64_t i = config.num_layers - 1; i >= 0; --i) {
    const std::string p = fmt::format("encoder.layers.encoder_layer_{}.", i);
    BlockOffsets& b = blocks[static_cast<size_t>(i)];
    b.fc2_weight = add(p + "mlp.3.weight", {D, M});
    b.begin = b.fc2_weight;
    b.fc2_bias = add(p + "mlp.3.bias", {D});
    b.fc1_weight = add(p + "mlp.0.weight", {M, D});
    b.fc1_bias = add(p + "mlp.0.bias", {M});
    b.ln2_weight = add(p + "ln_2.weight", {D});
    b.ln2_bias = add(p + "ln_2.bias", {D});
    b.proj_weight = add(p + "self_attention.out_proj.weight", {D, D});
    b.proj_bias = add(p + "self_attention.out_proj.bias", {D});
    b.qkv_weight = add(p + "self_attention.in_proj_weight", {3 * D, D});
    b.qkv_bias = add(p + "self_attention.in_proj_bias", {3 * D});
    b.ln1_weight = add(p + "ln_1.weight", {D});
    b.ln1_bias = add(p + "ln_1.bias", {D});
    b.end = close_span();
  }
  pos_embedding = add("encoder.pos_embedding", {1, config.seq_len(), D});
  embedding_begin = pos_embedding;
  class_token = add("class_token", {1, 1, D});
  conv_weight = add("conv_proj.weight", {D, config.channels, config.patch_size, config.patch_size});
  conv_bias = add("conv_proj.bias", {D});
  close_span();
  finish();
}

}  // namespace ddpx
