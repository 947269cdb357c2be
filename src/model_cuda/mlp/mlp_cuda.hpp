// MlpCuda: the CUDA MLP classifier (the math of MlpCpu): a CudaModel (model_cuda/cuda_model.hpp: parameter
// store, optimizers, the step's guarantees) whose forward/backward run on cuBLASLt (kernels/matmul) and the fused
// GELU and softmax cross-entropy kernels, over flat buffers in MlpLayout's backward order.
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

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "model/mlp/mlp_layout.hpp"
#include "model_cuda/cuda_model.hpp"

namespace ddpx {

class MlpCuda final : public CudaModel {
 public:
  class Network;  // the precision-specific forward/backward (mlp_cuda.cpp)

  MlpCuda(const MlpLayout& layout, int64_t max_batch, Precision precision, cudaStream_t compute_stream);
  ~MlpCuda() override;

  size_t peak_activation_bytes() const override;
  const MlpLayout& layout() const { return layout_; }

 protected:
  void run_forward(const float* d_images, int64_t batch, float* d_logits) override;
  void run_forward_backward(const float* d_images, const int32_t* d_labels, int64_t batch, float grad_scale,
                            float* d_loss, bool grads_are_zero,
                            const std::function<void(size_t, size_t)>& on_ready) override;

 private:
  MlpLayout layout_;
  std::unique_ptr<Network> network_;
};

}  // namespace ddpx
