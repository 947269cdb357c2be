// LayerNorm over the last dimension, forward and backward, for the fp32 residual stream.
// Guarantees:
//  - Forward: y = (x - mean) * rstd * gamma + beta with biased variance, rstd = 1/sqrt(var + eps); x is fp32, y is
//    Out-typed (fp32 or bf16: the next matmul's operand type); mean and rstd (fp32, one per row) are kept for the
//    backward pass. Rows may be strided (ld_x, ld_y), e.g. the class-token rows of the encoder output.
//  - Backward: dx = (accumulate ? dx : 0) + dLN/dx (fp32, in place on the residual-gradient stream), dx_copy (if
//    not nullptr) = the new dx in Out type for the next matmul; dgamma and dbeta are ADDED to (gradient
//    accumulation; with overwrite_param_grads they, and dx_column_sum, are written and their old contents never
//    read); dx_column_sum (if not nullptr) += the column sums of the new dx: the bias gradient of the
//    linear layer whose output is this residual-stream gradient (fused here to save a pass over dx).
//    Parameter-gradient sums use per-block partials and a fixed-order column sum: deterministic.
//  - dy has the Out type: the input gradient of the matmul that read y, stored in that matmul's operand type
//    (Note [LayerNorm's incoming gradient in the operand type], model_cuda/vit/vit_cuda.cpp); all arithmetic is fp32.
//  - dim must be a multiple of 4 and the leading dimensions too (16-byte vector access). gamma/beta are fp32.
//  - Each call enqueues its kernels on `stream` and allocates nothing; scratch comes from the caller.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/column_sum.hpp"

namespace ddpx {

template <typename Out>
struct LayerNormForwardArgs {
  const float* x = nullptr;
  int64_t ld_x = 0;
  const float* gamma = nullptr;
  const float* beta = nullptr;
  Out* y = nullptr;
  int64_t ld_y = 0;
  float* mean = nullptr;
  float* rstd = nullptr;
  int64_t rows = 0, dim = 0;
  float eps = 1e-6f;
};

template <typename Out>
struct LayerNormBackwardArgs {
  const float* x = nullptr;  // forward input
  int64_t ld_x = 0;
  const float* mean = nullptr;
  const float* rstd = nullptr;
  const float* gamma = nullptr;
  const Out* dy = nullptr;    // gradient of y, Out-typed (Note [LayerNorm's incoming gradient in the operand type])
  int64_t ld_dy = 0;
  float* dx = nullptr;        // fp32, ld_dx
  Out* dx_copy = nullptr;     // optional Out-typed copy of dx, ld_dx
  int64_t ld_dx = 0;
  bool accumulate = true;
  float* dgamma = nullptr;    // += sum over rows of dy * xhat
  float* dbeta = nullptr;     // += sum over rows of dy
  float* dx_column_sum = nullptr;  // optional: += sum over rows of the new dx
  bool overwrite_param_grads = false;  // dgamma, dbeta, dx_column_sum = the sums instead of += (old values unread)
  int64_t rows = 0, dim = 0;
  float* scratch = nullptr;   // layernorm_backward_scratch_floats(rows, dim) floats
  size_t scratch_floats = 0;
  // Optional: the partial rows' column sums (dgamma, dbeta, dx_column_sum) are added to this batch instead of
  // enqueued now, and land when the caller runs it (column_sum.hpp); scratch must stay untouched until then.
  ColumnSumBatch* fold_into = nullptr;
};

size_t layernorm_backward_scratch_floats(int64_t rows, int64_t dim);

template <typename Out>
void layernorm_forward(const LayerNormForwardArgs<Out>& args, cudaStream_t stream);

template <typename Out>
void layernorm_backward(const LayerNormBackwardArgs<Out>& args, cudaStream_t stream);

}  // namespace ddpx
