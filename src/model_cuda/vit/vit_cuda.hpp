// VitCuda: the single-GPU CUDA Vision Transformer (torchvision's VisionTransformer math, like VitCpu): a CudaModel
// (model_cuda/cuda_model.hpp: parameter store, optimizers, the step's guarantees) whose forward/backward run on
// cuBLASLt and the fused kernels, over flat buffers in VitLayout's backward order.
// Guarantees (besides CudaModel's):
//  - Owns all activations for max_batch (allocated once in the constructor) and a cuBLASLt workspace. After one
//    eager call of forward_backward (which picks and caches the matmul algorithms) the step allocates nothing and
//    can be captured in a CUDA graph; captured optimizer steps replay the step number and hyper-parameters they saw.
//  - on_ready follows VitCpu::backward's order: [0, head_end), blocks L-1 .. 0, [embedding_begin, buffer_size).
//  - Deterministic: the same inputs give bit-identical results (no atomics; cached algorithms).
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "model/vit/vit_layout.hpp"
#include "model_cuda/cuda_model.hpp"

namespace ddpx {

class VitCuda final : public CudaModel {
 public:
  class Engine;  // the precision-specific forward/backward (vit_cuda.cpp)

  VitCuda(const VitLayout& layout, int64_t max_batch, Precision precision, cudaStream_t compute_stream);
  ~VitCuda() override;

  size_t peak_activation_bytes() const override;
  const VitLayout& layout() const { return layout_; }

 protected:
  void run_forward(const float* d_images, int64_t batch, float* d_logits) override;
  void run_forward_backward(const float* d_images, const int32_t* d_labels, int64_t batch, float grad_scale,
                            float* d_loss, bool grads_are_zero,
                            const std::function<void(size_t, size_t)>& on_ready) override;

 private:
  VitLayout layout_;
  std::unique_ptr<Engine> engine_;
};

}  // namespace ddpx
