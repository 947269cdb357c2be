// VitCuda: the single-GPU CUDA Vision Transformer (torchvision's VisionTransformer math, like VitCpu): a CudaModel
// (model_cuda/cuda_model.hpp: parameter store, optimizers, the step's guarantees) whose forward/backward run on
// cuBLASLt and the fused kernels, over flat buffers in VitLayout's backward order; the network of the precision's
// operand type is chosen by NetworkModel (model_cuda/network_model.hpp).
// Guarantees (besides CudaModel's):
//  - Owns all activations for max_batch (allocated once in the constructor) and a cuBLASLt workspace. After one
//    eager call of forward_backward (which picks and caches the matmul algorithms) the step allocates nothing and
//    can be captured in a CUDA graph; captured optimizer steps replay the step number and hyper-parameters they saw.
//  - on_ready follows VitCpu::backward's order: [0, head_end), blocks L-1 .. 0, [embedding_begin, buffer_size).
//  - Deterministic: the same inputs give bit-identical results (no atomics; cached algorithms).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "model/vit/vit_layout.hpp"
#include "model_cuda/network_model.hpp"

namespace ddpx {

class VitCuda final : public NetworkModel<VitLayout> {
 public:
  VitCuda(const VitLayout& layout, int64_t max_batch, Precision precision, cudaStream_t compute_stream);
};

}  // namespace ddpx
