// Exact (erf) GELU, the MLP activation of torchvision's ViT: forward and the backward that rescales the incoming
// gradient in place. Guarantees: fp32 arithmetic whatever T; n must be a multiple of 4 (4-wide vector access);
// one kernel per call on `stream`, nothing allocated.
//   forward:  out = x * Phi(x)                 (Phi = standard normal CDF = 0.5 * (1 + erf(x / sqrt 2)))
//   backward: grad *= Phi(x) + x * phi(x)      (phi = standard normal density), x = the forward input
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace ddpx {

template <typename T>
void gelu_forward(const T* x, T* out, int64_t n, cudaStream_t stream);

template <typename T>
void gelu_backward(const T* x, T* grad, int64_t n, cudaStream_t stream);

}  // namespace ddpx
