// Exact (erf) GELU, the MLP activation of torchvision's ViT: forward, and the backward that rescales the incoming
// gradient in place and adds its column sums (the preceding linear layer's bias gradient) in the same pass.
// Guarantees: fp32 arithmetic whatever T, and for bf16 the same fp32 values as the fp32 path on the same inputs
// (looked up: Note [GELU of bf16 by table] in gelu.cu); element / column counts must be multiples of 4 (4-wide
// vector access); the bias-gradient sum is deterministic and the same on every GPU (partials over row ranges fixed
// by the shape, fixed-order column sum); nothing allocated. The first bf16 call on a device fills its tables and
// waits for `stream` once (inside a graph capture the fill is captured instead).
//   forward:  out = x * Phi(x)                 (Phi = standard normal CDF = 0.5 * (1 + erf(x / sqrt 2)))
//   backward: grad *= Phi(x) + x * phi(x)      (phi = standard normal density), x = the forward input;
//             bias_grad[c] += sum over rows of the new grad[r][c] (when bias_grad is not nullptr; = instead of +=
//             with overwrite_bias_grad, its old contents unread)
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/column_sum.hpp"

namespace ddpx {

template <typename T>
void gelu_forward(const T* x, T* out, int64_t n, cudaStream_t stream);

// x, grad: [rows, cols] row-major. scratch: gelu_backward_scratch_floats(rows, cols) floats (when bias_grad is set).
// With fold_into the bias gradient's column sum is added to that batch instead of enqueued now (column_sum.hpp):
// it lands when the caller runs the batch, and scratch must stay untouched until then.
template <typename T>
void gelu_backward(const T* x, T* grad, int64_t rows, int64_t cols, float* bias_grad, float* scratch,
                   size_t scratch_floats, cudaStream_t stream, bool overwrite_bias_grad = false,
                   ColumnSumBatch* fold_into = nullptr);

size_t gelu_backward_scratch_floats(int64_t rows, int64_t cols);

}  // namespace ddpx
