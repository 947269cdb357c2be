// Where a CUDA family's weight GEMM writes a weight's gradient (Note [bf16 weight gradients in their fp32 slots],
// cuda_model.hpp). Guarantees: with `bf16` false the GEMM writes or adds (beta 0 or 1) into the tensor's fp32
// slots; with `bf16` true (only for a bf16 model, T = __nv_bfloat16, and only where the step writes, beta 0; the
// CudaModel refuses the rest) it writes T into the first half of those same slots, which the optimizer widens.
// The one place both families (vit/, mlp/) take these decisions from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/matmul.hpp"

namespace ddpx {

// How one forward_backward of a network over operand type T writes its gradients, from CudaModel's GradWrite
// (cuda_model.hpp): weight_beta for the weight GEMMs (0 when the grads start zero and every slot is written once,
// else 1: accumulate), overwrite for the column-sum writers (biases, LayerNorm, embeddings), bf16_weights when the
// weight GEMMs write bf16 (never for T = float).
struct GradientWriting {
  float weight_beta = 1.f;
  bool overwrite = false;
  bool bf16_weights = false;
};

template <typename T>
GradientWriting gradient_writing(bool overwrite, bool bf16_weights) {
  return {overwrite ? 0.f : 1.f, overwrite, bf16_weights && !std::is_same_v<T, float>};
}

// Sets call.out, call.out_fp32, call.ld_out and call.beta for the gradient of the weight at buffer offset `weight`
// (row length `ld`) in `grads`.
template <typename T>
void set_weight_gradient_output(MatmulCall& call, float* grads, size_t weight, int64_t ld, float beta, bool bf16) {
  call.ld_out = ld, call.beta = beta;
  call.out = grads + weight, call.out_fp32 = true;
  if constexpr (!std::is_same_v<T, float>) {
    if (bf16) call.out = reinterpret_cast<T*>(grads + weight), call.out_fp32 = false;
  }
}

}  // namespace ddpx
