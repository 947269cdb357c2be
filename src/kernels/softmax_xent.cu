// Softmax cross-entropy kernels; see softmax_xent.hpp. One block per row (max, sum of exp, gradient), then one
// warp adds the row losses in a fixed order.
#include <cuda_bf16.h>

#include <cmath>

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "core/kernel_launch.cuh"
#include "kernels/device_utils.cuh"
#include "kernels/softmax_xent.hpp"

namespace ddpx {
namespace {

using kernels::from_float;
using kernels::warp_max;
using kernels::warp_sum;

constexpr int kThreads = 256;

__device__ float block_reduce(float v, bool is_max, float* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = is_max ? warp_max(v) : warp_sum(v);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float total = shared[0];
  for (int w = 1; w < kThreads / 32; ++w) total = is_max ? fmaxf(total, shared[w]) : total + shared[w];
  return total;
}

template <typename T>
__global__ void softmax_xent_rows(const float* logits, const int32_t* labels, int64_t classes, float grad_scale,
                                  T* dlogits, float* row_loss, int64_t batch) {
  __shared__ float shared[kThreads / 32];
  begin_after_producer();
  const int64_t row = blockIdx.x;
  const float* x = logits + row * classes;
  T* dx = dlogits + row * classes;
  const int32_t label = labels[row];
  const bool valid = label >= 0 && label < classes;
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < classes; c += kThreads) m = fmaxf(m, x[c]);
  m = block_reduce(m, true, shared);
  float s = 0.f;
  for (int64_t c = threadIdx.x; c < classes; c += kThreads) s += expf(x[c] - m);
  s = block_reduce(s, false, shared);
  const float inv_sum = 1.f / s, scale = grad_scale / static_cast<float>(batch);
  for (int64_t c = threadIdx.x; c < classes; c += kThreads) {
    const float p = expf(x[c] - m) * inv_sum;
    dx[c] = from_float<T>(valid ? scale * (p - (c == label ? 1.f : 0.f)) : 0.f);
  }
  if (threadIdx.x == 0) row_loss[row] = valid ? (m + logf(s) - x[label]) : NAN;
}

__global__ void mean_of_rows(const float* row_loss, int64_t batch, float* loss) {
  begin_after_producer();
  float acc = 0.f;
  for (int64_t r = threadIdx.x; r < batch; r += 32) acc += row_loss[r];
  acc = warp_sum(acc);
  if (threadIdx.x == 0) *loss = acc / static_cast<float>(batch);
}

}  // namespace

template <typename T>
void softmax_cross_entropy(const float* logits, const int32_t* labels, int64_t batch, int64_t classes,
                           float grad_scale, float* loss, T* dlogits, float* row_loss, cudaStream_t stream) {
  DDPX_REQUIRE(batch > 0 && classes > 0, "softmax_cross_entropy: empty shape (batch {}, classes {})", batch, classes);
  launch_after_producer("softmax_xent_rows", softmax_xent_rows<T>, static_cast<unsigned>(batch), kThreads, 0, stream,
                        logits, labels, classes, grad_scale, dlogits, row_loss, batch);
  launch_after_producer("mean_of_rows", mean_of_rows, 1, 32, 0, stream, row_loss, batch, loss);
}

template void softmax_cross_entropy<float>(const float*, const int32_t*, int64_t, int64_t, float, float*, float*,
                                           float*, cudaStream_t);
template void softmax_cross_entropy<__nv_bfloat16>(const float*, const int32_t*, int64_t, int64_t, float, float*,
                                                   __nv_bfloat16*, float*, cudaStream_t);

}  // namespace ddpx
