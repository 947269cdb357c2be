// MlpCuda: the CUDA MLP classifier (the math of MlpCpu): a CudaModel (model_cuda/cuda_model.hpp: parameter
// store, optimizers, the step's guarantees) whose forward/backward run on cuBLASLt (kernels/matmul) and the fused
// GELU and softmax cross-entropy kernels, over flat buffers in MlpLayout's backward order; the network of the
// precision's operand type is chosen by NetworkModel (model_cuda/network_model.hpp).
// Data flow (T = the matmul operand type: fp32 for fp32/tf32, bf16 for bf16; accumulation always fp32):
//   forward:  x = images [T] -> pre_l = x W_l^T + b_l [T] -> h_l = GELU(pre_l) [T] ... -> logits = h W^T + b [fp32]
//   backward: dlogits [T] -> head weight gradient (fp32 grads), bias = column sums, d h = dlogits W [T] -> per
//             hidden layer: GELU backward in place (adds the bias gradient), weight gradient, d x = d pre W [T].
// Guarantees (besides CudaModel's):
//  - Owns all activations for max_batch (allocated in the constructor); after one eager forward_backward (which
//    picks the matmul algorithms) a step allocates nothing and can be captured in a CUDA graph.
//  - on_ready: the head's span, then hidden L-1 .. 0 (MlpLayout::ready_spans()), each after the last kernel that
//    reads that layer's weights.
//  - The width and the flattened input size must be multiples of 4 (the vectorized GELU and cast kernels); other
//    shapes are a ddpx::Error naming the model, at construction.
//  - Deterministic: the same inputs give bit-identical results (no atomics; cached algorithms).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "model/mlp/mlp_layout.hpp"
#include "model_cuda/network_model.hpp"

namespace ddpx {

class MlpCuda final : public NetworkModel<MlpLayout> {
 public:
  MlpCuda(const MlpLayout& layout, int64_t max_batch, Precision precision, cudaStream_t compute_stream);
};

}  // namespace ddpx
