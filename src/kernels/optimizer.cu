// Fused optimizer and cast kernels; see optimizer.hpp. Grid-stride loops over 4-element vectors. The gradient
// source is a template parameter (fp32, or 16-bit from a cast hook's wire buffer), so the common fp32 loop is the
// one it was.
#include <cuda_fp16.h>

#include "core/error.hpp"
#include "core/cuda_check.hpp"
#include "core/internal_assert.hpp"
#include "kernels/device_utils.cuh"
#include "kernels/optimizer.hpp"

namespace ddpx {
namespace {

using kernels::Float4;
using kernels::load4;
using kernels::store4;

constexpr int kThreads = 256;

// Records the lowest offset of a non-finite gradient of this vector (no atomics when all four are finite).
__device__ __forceinline__ void note_nonfinite(unsigned long long* flag, uint64_t base, const Float4& g,
                                               int64_t v) {
  if (flag == nullptr) return;
#pragma unroll
  for (int i = 0; i < 4; ++i)
    if (!isfinite(g.v[i])) {
      atomicMin(flag, static_cast<unsigned long long>(base + 4 * v + i));
      return;
    }
}

enum class GradSource { fp32, bf16, fp16 };

// Four gradients at vector v, widened to fp32 (exact for both 16-bit formats).
template <GradSource kSource>
__device__ __forceinline__ Float4 load_grads(const float* grads, const uint16_t* wire, int64_t v) {
  if constexpr (kSource == GradSource::fp32) {
    return load4(grads + 4 * v);
  } else {
    const ushort4 w = reinterpret_cast<const ushort4*>(wire)[v];
    const uint16_t raw[4] = {w.x, w.y, w.z, w.w};
    Float4 g;
#pragma unroll
    for (int i = 0; i < 4; ++i)
      g.v[i] = kSource == GradSource::bf16 ? __bfloat162float(__ushort_as_bfloat16(raw[i]))
                                           : __half2float(__ushort_as_half(raw[i]));
    return g;
  }
}

template <GradSource kSource>
__global__ void sgd_kernel(float* params, const float* grads, float* momentum_buffer, __nv_bfloat16* low,
                           int64_t vectors, SgdUpdate u) {
  for (int64_t v = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; v < vectors;
       v += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    Float4 p = load4(params + 4 * v), g = load_grads<kSource>(grads, u.wire.data, v);
    note_nonfinite(u.nonfinite_gradient, u.offset_base, g, v);
#pragma unroll
    for (int i = 0; i < 4; ++i) g.v[i] += u.weight_decay * p.v[i];
    if (u.momentum != 0.f) {
      Float4 buf = u.first_step ? g : load4(momentum_buffer + 4 * v);
      if (!u.first_step) {
#pragma unroll
        for (int i = 0; i < 4; ++i) buf.v[i] = u.momentum * buf.v[i] + (1.f - u.dampening) * g.v[i];
      }
      store4(momentum_buffer + 4 * v, buf);
#pragma unroll
      for (int i = 0; i < 4; ++i) g.v[i] = u.nesterov ? g.v[i] + u.momentum * buf.v[i] : buf.v[i];
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) p.v[i] -= u.lr * g.v[i];
    store4(params + 4 * v, p);
    if (low) store4(low + 4 * v, p);
  }
}

template <GradSource kSource>
__global__ void adamw_kernel(float* params, const float* grads, float* exp_avg, float* exp_avg_sq,
                             __nv_bfloat16* low, int64_t vectors, AdamWUpdate u) {
  const float decay = 1.f - u.lr * u.weight_decay, step_size = u.lr / u.bias_correction1;
  for (int64_t v = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; v < vectors;
       v += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    Float4 p = load4(params + 4 * v), g = load_grads<kSource>(grads, u.wire.data, v), m = load4(exp_avg + 4 * v),
           s = load4(exp_avg_sq + 4 * v);
    note_nonfinite(u.nonfinite_gradient, u.offset_base, g, v);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      p.v[i] *= decay;
      m.v[i] += (1.f - u.beta1) * (g.v[i] - m.v[i]);
      s.v[i] = u.beta2 * s.v[i] + (1.f - u.beta2) * g.v[i] * g.v[i];
      p.v[i] -= step_size * m.v[i] / (sqrtf(s.v[i]) / u.bias_correction2_sqrt + u.eps);
    }
    store4(params + 4 * v, p);
    store4(exp_avg + 4 * v, m);
    store4(exp_avg_sq + 4 * v, s);
    if (low) store4(low + 4 * v, p);
  }
}

__global__ void cast_kernel(const float* in, __nv_bfloat16* out, int64_t vectors) {
  for (int64_t v = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; v < vectors;
       v += static_cast<int64_t>(gridDim.x) * blockDim.x)
    store4(out + 4 * v, load4(in + 4 * v));
}

void check_count(int64_t n, const char* what) {
  DDPX_REQUIRE(n >= 0 && n % 4 == 0, "{}: element count {} must be a multiple of 4", what, n);
}

GradSource source_of(const WireGrads& wire) {
  return wire.data == nullptr ? GradSource::fp32 : wire.fp16 ? GradSource::fp16 : GradSource::bf16;
}

void check_sources(const float* grads, const WireGrads& wire, const char* what) {
  DDPX_INTERNAL_ASSERT(grads != nullptr || wire.data != nullptr, "{}: no gradients (neither fp32 nor wire)", what);
  DDPX_INTERNAL_ASSERT(reinterpret_cast<uintptr_t>(wire.data) % 8 == 0,
                       "{}: 16-bit gradients at {} are not 8-byte aligned (4-element vectors)", what,
                       static_cast<const void*>(wire.data));
}

}  // namespace

void sgd_update(float* params, const float* grads, float* momentum_buffer, __nv_bfloat16* low_copy, int64_t n,
                const SgdUpdate& update, cudaStream_t stream) {
  check_count(n, "sgd_update");
  DDPX_REQUIRE(update.momentum == 0.f || momentum_buffer != nullptr,
               "sgd_update: momentum {} needs a momentum buffer", update.momentum);
  check_sources(grads, update.wire, "sgd_update");
  if (n == 0) return;
  const unsigned blocks = kernels::elementwise_blocks(n / 4, kThreads);
  switch (source_of(update.wire)) {
    case GradSource::fp32:
      sgd_kernel<GradSource::fp32><<<blocks, kThreads, 0, stream>>>(params, grads, momentum_buffer, low_copy, n / 4,
                                                                    update);
      break;
    case GradSource::bf16:
      sgd_kernel<GradSource::bf16><<<blocks, kThreads, 0, stream>>>(params, grads, momentum_buffer, low_copy, n / 4,
                                                                    update);
      break;
    case GradSource::fp16:
      sgd_kernel<GradSource::fp16><<<blocks, kThreads, 0, stream>>>(params, grads, momentum_buffer, low_copy, n / 4,
                                                                    update);
      break;
  }
  DDPX_CHECK_LAUNCH("sgd_kernel");
}

void adamw_update(float* params, const float* grads, float* exp_avg, float* exp_avg_sq, __nv_bfloat16* low_copy,
                  int64_t n, const AdamWUpdate& update, cudaStream_t stream) {
  check_count(n, "adamw_update");
  check_sources(grads, update.wire, "adamw_update");
  if (n == 0) return;
  const unsigned blocks = kernels::elementwise_blocks(n / 4, kThreads);
  switch (source_of(update.wire)) {
    case GradSource::fp32:
      adamw_kernel<GradSource::fp32><<<blocks, kThreads, 0, stream>>>(params, grads, exp_avg, exp_avg_sq, low_copy,
                                                                      n / 4, update);
      break;
    case GradSource::bf16:
      adamw_kernel<GradSource::bf16><<<blocks, kThreads, 0, stream>>>(params, grads, exp_avg, exp_avg_sq, low_copy,
                                                                      n / 4, update);
      break;
    case GradSource::fp16:
      adamw_kernel<GradSource::fp16><<<blocks, kThreads, 0, stream>>>(params, grads, exp_avg, exp_avg_sq, low_copy,
                                                                      n / 4, update);
      break;
  }
  DDPX_CHECK_LAUNCH("adamw_kernel");
}

void cast_to_bf16(const float* in, __nv_bfloat16* out, int64_t n, cudaStream_t stream) {
  check_count(n, "cast_to_bf16");
  if (n == 0) return;
  cast_kernel<<<kernels::elementwise_blocks(n / 4, kThreads), kThreads, 0, stream>>>(in, out, n / 4);
  DDPX_CHECK_LAUNCH("cast_kernel");
}

}  // namespace ddpx
