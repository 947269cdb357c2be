// Builds the backward-ordered flat layout of a ViT's parameters (see param_layout.hpp for the guarantees).
#include "model/param_layout.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace ddpx {

size_t ParamLayout::add(std::string name, std::vector<int64_t> shape) {
  size_t numel = 1;
  for (int64_t d : shape) numel *= static_cast<size_t>(d);
  size_t offset = (buffer_size_ + kAlignElements - 1) / kAlignElements * kAlignElements;
  tensors_.push_back(TensorSlot{std::move(name), std::move(shape), offset, numel});
  buffer_size_ = offset + numel;
  num_params_ += numel;
  return offset;
}

ParamLayout::ParamLayout(const VitConfig& config) : config_(config) {
  config_.validate();
  const int64_t D = config.hidden_dim, M = config.mlp_dim, C = config.num_classes;
  head_weight = add("heads.head.weight", {C, D});
  head_bias = add("heads.head.bias", {C});
  final_ln_weight = add("encoder.ln.weight", {D});
  final_ln_bias = add("encoder.ln.bias", {D});
  head_end = buffer_size_;
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
    b.end = buffer_size_;
  }
  pos_embedding = add("encoder.pos_embedding", {1, config.seq_len(), D});
  embedding_begin = pos_embedding;
  class_token = add("class_token", {1, 1, D});
  conv_weight = add("conv_proj.weight", {D, config.channels, config.patch_size, config.patch_size});
  conv_bias = add("conv_proj.bias", {D});
  // Pad the end too, so buffers sized buffer_size() can be split into aligned halves by vectorized kernels.
  buffer_size_ = (buffer_size_ + kAlignElements - 1) / kAlignElements * kAlignElements;
}

const TensorSlot* ParamLayout::find(std::string_view name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

const TensorSlot& ParamLayout::at(std::string_view name) const {
  const TensorSlot* t = find(name);
  DDPX_REQUIRE(t != nullptr, "model '{}' has no tensor named '{}'", config_.name, name);
  return *t;
}

}  // namespace ddpx
