// VitCpu: the CPU reference Vision Transformer, forward and backward, exactly torchvision's VisionTransformer math.
// Guarantees:
//  - Math: conv patch embedding (patch vectors ordered (c, ky, kx) like conv_proj.weight [D, C, P, P]), class token
//    prepended as token 0, + pos_embedding, L pre-LN blocks (x += out_proj(MHA(ln_1(x))); x += mlp.3(GELU_erf(
//    mlp.0(ln_2(x))))), encoder.ln, heads.head on token 0. LayerNorm eps = config.layer_norm_eps. No dropout.
//  - Parameters and gradients are flat buffers in VitLayout's (backward) order, owned by the caller; the object
//    owns a copy of the layout and the activation storage, sized for max_batch at construction (forward() with a
//    larger batch is an error; nothing reallocates after construction).
//  - backward() ADDS (+=) into every parameter gradient, never writes padding, and reports each gradient span as
//    soon as it is final, in buffer order: [0, head_end), then block L-1 .. 0, then [embedding_begin, buffer_size).
//  - Not thread-safe: one VitCpu per thread. Matmuls go through OpenBLAS, which may use its own threads.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "model/cross_entropy.hpp"
#include "model/vit/vit_layout.hpp"

namespace ddpx {

template <typename T>
class VitCpu {
 public:
  VitCpu(const VitLayout& layout, int64_t max_batch);  // allocates activation storage for max_batch
  // The activation storage the constructor allocates, in bytes (double: no overflow for any batch), so that a
  // caller can refuse a batch that cannot fit before anything is touched (make_cpu_engine does).
  static double activation_bytes(const VitConfig& config, int64_t max_batch);

  // images: [batch, C, H, W] row-major; params: flat buffer of layout.buffer_size(); logits: [batch, classes].
  // Keeps the activations needed by backward().
  void forward(const T* params, const T* images, int64_t batch, T* logits);

  // Backward of the last forward. ADDS (+=) every parameter gradient into grads (flat, same layout) so gradient
  // accumulation works; the caller zeroes grads. on_ready(begin, end) is called when grads[begin, end) are final:
  // once after heads+encoder.ln ([0, layout.head_end)), once per block from the last to the first
  // ([blocks[i].begin, blocks[i].end)), once after the embeddings ([layout.embedding_begin, buffer_size())).
  void backward(const T* params, const T* dlogits, T* grads,
                const std::function<void(size_t begin, size_t end)>& on_ready = {});

  const VitLayout& layout() const { return layout_; }
  int64_t max_batch() const { return max_batch_; }

 private:
  // Activations of one encoder block kept for its backward pass ([rows] = batch * seq_len tokens).
  struct BlockActivations {
    std::vector<T> input;            // [rows, D]  residual stream entering the block
    std::vector<T> ln1_mean, ln1_rstd;  // [rows]
    std::vector<T> ln1_out;          // [rows, D]
    std::vector<T> qkv;              // [rows, 3D] q | k | v
    std::vector<T> attn_probs;       // [batch, heads, S, S] softmax over keys
    std::vector<T> attn_out;         // [rows, D]  heads concatenated, before out_proj
    std::vector<T> mid;              // [rows, D]  residual stream after attention
    std::vector<T> ln2_mean, ln2_rstd;  // [rows]
    std::vector<T> ln2_out;          // [rows, D]
    std::vector<T> fc1_out;          // [rows, M]  before GELU
    std::vector<T> gelu_out;         // [rows, M]
  };

  void block_forward(const BlockOffsets& b, const T* params, BlockActivations& act, T* out);
  // d_residual holds d(block output) on entry and d(block input) on exit.
  void block_backward(const BlockOffsets& b, const T* params, const BlockActivations& act, T* grads,
                      T* d_residual);
  void attention_forward(BlockActivations& act);
  void attention_backward(const BlockActivations& act, const T* d_attn_out, T* d_qkv);

  VitLayout layout_;
  int64_t max_batch_;
  int64_t batch_ = 0;  // batch of the last forward; 0 before the first

  std::vector<T> patches_;           // [batch * num_patches, C*P*P]
  std::vector<BlockActivations> blocks_;
  std::vector<T> encoder_out_;       // [rows, D] residual stream after the last block
  std::vector<T> final_ln_mean_, final_ln_rstd_;  // [batch] (class token rows only)
  std::vector<T> final_ln_out_;      // [batch, D]

  // Backward scratch.
  std::vector<T> d_residual_;        // [rows, D]
  std::vector<T> d_wide_;            // [rows, M]
  std::vector<T> d_narrow_;          // [rows, D]
  std::vector<T> d_qkv_;             // [rows, 3D]
  std::vector<T> d_scores_;          // [S, S]
  std::vector<T> d_final_;           // [batch, D]
};

}  // namespace ddpx
