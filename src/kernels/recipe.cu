// The training recipe's kernels; see recipe.hpp for the guarantees and Note [The learning rate on the device].
#include <cuda_bf16.h>

#include <cmath>

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "core/kernel_launch.cuh"
#include "kernels/device_utils.cuh"
#include "kernels/recipe.hpp"

namespace ddpx {
namespace {

using kernels::from_float;
using kernels::warp_max;
using kernels::warp_sum;

constexpr int kThreads = 256;
constexpr int kClipBlocks = 264;  // partial sums: a fixed count, so the summation order never changes

__global__ void advance_learning_rate_kernel(LrFormula schedule, long long* step_counter, float* lr) {
  begin_after_producer();
  *lr = static_cast<float>(lr_formula_at(schedule, ++*step_counter));  // core/lr_formula.hpp: the host's formula
}

__global__ void square_sum_partials(const float* grads, int64_t n, double* partials) {
  begin_after_producer();
  __shared__ double shared[kThreads];
  double acc = 0;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * kThreads)
    acc += static_cast<double>(grads[i]) * grads[i];
  shared[threadIdx.x] = acc;
  __syncthreads();
  for (int width = kThreads / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) shared[threadIdx.x] += shared[threadIdx.x + width];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = shared[0];
}

__global__ void finish_clip(const double* partials, float max_norm, float* norm, float* coefficient) {
  begin_after_producer();
  if (threadIdx.x != 0) return;
  double sum = 0;
  for (int b = 0; b < kClipBlocks; ++b) sum += partials[b];
  const float total = static_cast<float>(sqrt(sum));
  const float c = max_norm / (total + 1e-6f);
  *norm = total;
  *coefficient = c < 1.f ? c : (isnan(c) ? c : 1.f);
}

__global__ void scale_by(float* grads, int64_t n, const float* coefficient) {
  begin_after_producer();
  const float c = *coefficient;
  if (c == 1.f) return;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * kThreads)
    grads[i] *= c;
}

__global__ void weight_average_kernel(float* values, const float* params, int64_t n, float keep, float blend,
                                      bool first) {
  begin_after_producer();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * kThreads)
    values[i] = first ? params[i] : __fadd_rn(__fmul_rn(keep, values[i]), __fmul_rn(blend, params[i]));
}

__device__ float block_reduce(float v, bool is_max, float* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = is_max ? warp_max(v) : warp_sum(v);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float total = shared[0];
  for (int w = 1; w < kThreads / 32; ++w) total = is_max ? fmaxf(total, shared[w]) : total + shared[w];
  __syncthreads();
  return total;
}

// One block per row: target_j = (1 - s)(mix [j == a] + (1 - mix) [j == b]) + s / C; loss = sum_j target_j (lse - x_j).
template <typename T>
__global__ void soft_xent_rows(const float* logits, const int32_t* labels, const int32_t* mixed_labels, float mix,
                               float smoothing, int64_t classes, float grad_scale, T* dlogits, float* row_loss,
                               int64_t batch) {
  __shared__ float shared[kThreads / 32];
  begin_after_producer();
  const int64_t row = blockIdx.x;
  const float* x = logits + row * classes;
  T* dx = dlogits + row * classes;
  const int32_t a = labels[row], b = mixed_labels != nullptr ? mixed_labels[row] : a;
  const float own = mixed_labels != nullptr ? mix : 1.f;
  const bool valid = a >= 0 && a < classes && b >= 0 && b < classes;
  const float uniform = smoothing / static_cast<float>(classes);
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < classes; c += kThreads) m = fmaxf(m, x[c]);
  m = block_reduce(m, true, shared);
  float s = 0.f;
  for (int64_t c = threadIdx.x; c < classes; c += kThreads) s += expf(x[c] - m);
  s = block_reduce(s, false, shared);
  const float lse = m + logf(s), inv_sum = 1.f / s, scale = grad_scale / static_cast<float>(batch);
  float loss = 0.f;
  for (int64_t c = threadIdx.x; c < classes; c += kThreads) {
    const float target = uniform + (1.f - smoothing) * ((c == a ? own : 0.f) + (c == b ? 1.f - own : 0.f));
    loss += target * (lse - x[c]);
    const float p = expf(x[c] - m) * inv_sum;
    dx[c] = from_float<T>(valid ? scale * (p - target) : 0.f);
  }
  loss = block_reduce(loss, false, shared);
  if (threadIdx.x == 0) row_loss[row] = valid ? loss : NAN;
}

__global__ void mean_of_rows(const float* row_loss, int64_t batch, float* loss) {
  begin_after_producer();
  float acc = 0.f;
  for (int64_t r = threadIdx.x; r < batch; r += 32) acc += row_loss[r];
  acc = warp_sum(acc);
  if (threadIdx.x == 0) *loss = acc / static_cast<float>(batch);
}

__global__ void mix_kernel(const float* in, float* out, int64_t batch, int64_t channels, int64_t height,
                           int64_t width, DeviceMixDraw draw) {
  begin_after_producer();
  const int64_t image = channels * height * width, total = batch * image;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int64_t b = i / image, within = i % image, partner = ((b + batch - 1) % batch) * image + within;
    if (draw.kind == 1) {
      out[i] = __fadd_rn(__fmul_rn(in[partner], draw.other), __fmul_rn(in[i], draw.own));
    } else {
      const int64_t x = within % width, y = (within / width) % height;
      const bool pasted = x >= draw.x1 && x < draw.x2 && y >= draw.y1 && y < draw.y2;
      out[i] = pasted ? in[partner] : in[i];
    }
  }
}

__global__ void partner_labels(const int32_t* labels, int32_t* mixed_labels, int64_t batch) {
  begin_after_producer();
  for (int64_t b = threadIdx.x; b < batch; b += blockDim.x) mixed_labels[b] = labels[(b + batch - 1) % batch];
}

}  // namespace

void advance_learning_rate(const LrFormula& schedule, long long* step, float* lr, cudaStream_t stream) {
  launch_after_producer("advance_learning_rate", advance_learning_rate_kernel, 1, 1, 0, stream, schedule, step, lr);
}

int clip_partials_count() { return kClipBlocks; }

void clip_grad_norm(float* grads, int64_t n, float max_norm, double* partials, float* norm, float* coefficient,
                    cudaStream_t stream) {
  DDPX_REQUIRE(n >= 0 && max_norm > 0, "clip_grad_norm: {} elements, max norm {}", n, max_norm);
  launch_after_producer("square_sum_partials", square_sum_partials, kClipBlocks, kThreads, 0, stream, grads, n,
                        partials);
  launch_after_producer("finish_clip", finish_clip, 1, 32, 0, stream, static_cast<const double*>(partials), max_norm,
                        norm, coefficient);
  launch_after_producer("scale_by", scale_by, kernels::elementwise_blocks(n, kThreads), kThreads, 0, stream, grads, n,
                        static_cast<const float*>(coefficient));
}

void weight_average_update(float* values, const float* params, int64_t n, float keep, float blend, bool first,
                           cudaStream_t stream) {
  if (n == 0) return;
  launch_after_producer("weight_average", weight_average_kernel, kernels::elementwise_blocks(n, kThreads), kThreads,
                        0, stream, values, params, n, keep, blend, first);
}

template <typename T>
void softmax_cross_entropy_soft(const float* logits, const int32_t* labels, const int32_t* mixed_labels, float mix,
                                float label_smoothing, int64_t batch, int64_t classes, float grad_scale, float* loss,
                                T* dlogits, float* row_loss, cudaStream_t stream) {
  DDPX_REQUIRE(batch > 0 && classes > 0, "softmax_cross_entropy_soft: empty shape (batch {}, classes {})", batch,
               classes);
  launch_after_producer("soft_xent_rows", soft_xent_rows<T>, static_cast<unsigned>(batch), kThreads, 0, stream,
                        logits, labels, mixed_labels, mix, label_smoothing, classes, grad_scale, dlogits, row_loss,
                        batch);
  launch_after_producer("mean_of_rows", mean_of_rows, 1, 32, 0, stream, static_cast<const float*>(row_loss), batch,
                        loss);
}

template void softmax_cross_entropy_soft<float>(const float*, const int32_t*, const int32_t*, float, float, int64_t,
                                                int64_t, float, float*, float*, float*, cudaStream_t);
template void softmax_cross_entropy_soft<__nv_bfloat16>(const float*, const int32_t*, const int32_t*, float, float,
                                                        int64_t, int64_t, float, float*, __nv_bfloat16*, float*,
                                                        cudaStream_t);

void apply_mix(const float* in, float* out, const int32_t* labels, int32_t* mixed_labels, int64_t batch,
               int64_t channels, int64_t height, int64_t width, const DeviceMixDraw& draw, cudaStream_t stream) {
  DDPX_REQUIRE(draw.kind == 1 || draw.kind == 2, "apply_mix: draw kind {} is neither mixup (1) nor cutmix (2)",
               draw.kind);
  const int64_t total = batch * channels * height * width;
  if (total == 0) return;
  launch_after_producer("mix", mix_kernel, kernels::elementwise_blocks(total, kThreads), kThreads, 0, stream, in, out,
                        batch, channels, height, width, draw);
  launch_after_producer("partner_labels", partner_labels, 1, 256, 0, stream, labels, mixed_labels, batch);
}

}  // namespace ddpx
