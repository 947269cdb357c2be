// VitLayout: the ViT's FlatLayout (model/flat_layout.hpp), in backward order, plus the typed offsets its CPU and
// CUDA code use.
// Guarantees:
//  - Tensors are laid out in the order their gradients become final during the backward pass: heads.head first,
//    then encoder.ln, then encoder layers L-1 .. 0 (inside a layer: mlp.3, mlp.0, ln_2, out_proj, in_proj, ln_1),
//    then encoder.pos_embedding, class_token, conv_proj. So the gradients that are final at any point of the
//    backward pass always form a prefix [0, ready_end) of the gradient buffer.
//  - ready_spans() are [0, head_end), then block L-1 .. 0 ([blocks[i].begin, blocks[i].end)), then
//    [embedding_begin, buffer_size()): the spans VitCpu and VitCuda announce, in that order.
//  - Alignment and padding as FlatLayout's; spec() is VitConfig::spec().
//  - Names and shapes are exactly torchvision's VisionTransformer state_dict names and shapes.
#pragma once
#include <cstddef>
#include <vector>

#include "model/flat_layout.hpp"
#include "model/vit/vit_config.hpp"

namespace ddpx {

// Offsets (in elements) of one encoder block's tensors.
struct BlockOffsets {
  size_t ln1_weight, ln1_bias;
  size_t qkv_weight, qkv_bias;    // self_attention.in_proj_weight [3D, D], in_proj_bias [3D]
  size_t proj_weight, proj_bias;  // self_attention.out_proj.weight [D, D], .bias [D]
  size_t ln2_weight, ln2_bias;
  size_t fc1_weight, fc1_bias;    // mlp.0.weight [M, D], .bias [M]
  size_t fc2_weight, fc2_bias;    // mlp.3.weight [D, M], .bias [D]
  size_t begin, end;              // the block's span [begin, end) in the buffer
};

class VitLayout : public FlatLayout {
 public:
  explicit VitLayout(const VitConfig& config);

  const VitConfig& config() const { return config_; }

  // Typed offsets for the model code.
  size_t conv_weight = 0, conv_bias = 0, class_token = 0, pos_embedding = 0;
  size_t final_ln_weight = 0, final_ln_bias = 0, head_weight = 0, head_bias = 0;
  std::vector<BlockOffsets> blocks;  // blocks[i] is encoder_layer_i

  // Where the gradient buffer is final after each backward stage, for Reducer::mark_ready:
  // head + final LN done -> [0, head_end); block i done -> [0, blocks[i].end); embeddings done -> everything.
  size_t head_end = 0;      // end of heads.head.* and encoder.ln.*
  size_t embedding_begin = 0;  // start of pos_embedding, class_token, conv_proj (last to become final)

 private:
  VitConfig config_;
};

}  // namespace ddpx
