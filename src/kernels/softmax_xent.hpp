// Fused softmax cross-entropy over a batch of fp32 logits: the mean loss and its gradient in one pass per row.
// Guarantees: loss (device fp32 scalar) = mean over rows of logsumexp(row) - row[label]; dlogits (T-typed, the
// operand type of the head's backward matmuls) = grad_scale / batch * (softmax(row) - onehot(label)). A label
// outside [0, classes) makes the loss NaN (and that row's gradient zero) rather than reading out of bounds.
// Deterministic (fixed-order reductions). Two kernels on `stream`; row_loss is caller scratch of `batch` floats.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace ddpx {

template <typename T>
void softmax_cross_entropy(const float* logits, const int32_t* labels, int64_t batch, int64_t classes,
                           float grad_scale, float* loss, T* dlogits, float* row_loss, cudaStream_t stream);

}  // namespace ddpx
