// Exact-GELU kernels; see gelu.hpp. Grid-stride loops over 4-element vectors.
#include <cuda_bf16.h>

#include "core/error.hpp"
#include "cuda/cuda_check.hpp"
#include "kernels/device_utils.cuh"
#include "kernels/gelu.hpp"

namespace ddpx {
namespace {

using kernels::Float4;
using kernels::load4;
using kernels::store4;

constexpr int kThreads = 256;

__device__ __forceinline__ float gelu(float x) { return 0.5f * x * (1.f + erff(x * 0.70710678118654752f)); }
__device__ __forceinline__ float gelu_derivative(float x) {
  const float cdf = 0.5f * (1.f + erff(x * 0.70710678118654752f));
  const float pdf = 0.39894228040143268f * expf(-0.5f * x * x);
  return cdf + x * pdf;
}

template <typename T>
__global__ void gelu_forward_kernel(const T* x, T* out, int64_t vectors) {
  for (int64_t v = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; v < vectors;
       v += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    Float4 in = load4(x + 4 * v), o;
#pragma unroll
    for (int i = 0; i < 4; ++i) o.v[i] = gelu(in.v[i]);
    store4(out + 4 * v, o);
  }
}

template <typename T>
__global__ void gelu_backward_kernel(const T* x, T* grad, int64_t vectors) {
  for (int64_t v = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; v < vectors;
       v += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    Float4 in = load4(x + 4 * v), g = load4(grad + 4 * v);
#pragma unroll
    for (int i = 0; i < 4; ++i) g.v[i] *= gelu_derivative(in.v[i]);
    store4(grad + 4 * v, g);
  }
}

}  // namespace

template <typename T>
void gelu_forward(const T* x, T* out, int64_t n, cudaStream_t stream) {
  DDPX_REQUIRE(n % 4 == 0, "gelu_forward: element count {} must be a multiple of 4", n);
  if (n == 0) return;
  gelu_forward_kernel<T><<<kernels::elementwise_blocks(n / 4, kThreads), kThreads, 0, stream>>>(x, out, n / 4);
  DDPX_CHECK_LAUNCH("gelu_forward_kernel");
}

template <typename T>
void gelu_backward(const T* x, T* grad, int64_t n, cudaStream_t stream) {
  DDPX_REQUIRE(n % 4 == 0, "gelu_backward: element count {} must be a multiple of 4", n);
  if (n == 0) return;
  gelu_backward_kernel<T><<<kernels::elementwise_blocks(n / 4, kThreads), kThreads, 0, stream>>>(x, grad, n / 4);
  DDPX_CHECK_LAUNCH("gelu_backward_kernel");
}

template void gelu_forward<float>(const float*, float*, int64_t, cudaStream_t);
template void gelu_forward<__nv_bfloat16>(const __nv_bfloat16*, __nv_bfloat16*, int64_t, cudaStream_t);
template void gelu_backward<float>(const float*, float*, int64_t, cudaStream_t);
template void gelu_backward<__nv_bfloat16>(const __nv_bfloat16*, __nv_bfloat16*, int64_t, cudaStream_t);

}  // namespace ddpx
