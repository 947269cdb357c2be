// Numeric precision of the CUDA engine, and its command-line spelling. In model/ (not cuda/) because its users are
// the run plan (train/train_options.hpp, also in builds without CUDA) as much as the CUDA ViT.
// fp32: true fp32 everywhere (cuBLAS COMPUTE_32F, no TF32). tf32: fp32 storage, matmuls in TF32
// (COMPUTE_32F_FAST_TF32), attention's products too (kernels/attention_tf32.hpp; softmax and accumulation fp32, as
// PyTorch's allow_tf32 does for its attention matmuls). bf16: bf16 weights and activations for the matmuls and attention, fp32 accumulation,
// fp32 residual stream, LayerNorm statistics, master weights and gradients (what PyTorch autocast does).
#pragma once
#include <string_view>

namespace ddpx {

enum class Precision { fp32, tf32, bf16 };

// Accepts "fp32", "tf32", "bf16"; anything else is a ddpx::Error naming --precision and the choices.
Precision parse_precision(std::string_view text);
std::string_view precision_name(Precision precision);

}  // namespace ddpx
