// Fused optimizer and cast kernels; see optimizer.hpp. Grid-stride loops over 4-element vectors. The gradient
// source is a template parameter (fp32, 16-bit from a cast hook's wire buffer, low-rank factors of width K, or the
// fp32 buffer with packed bf16 regions), so the common fp32 loop is the one it was.
// Note [Update arithmetic spelled out]: the update's arithmetic is written with the rounding intrinsics
// (__fmaf_rn, __fmul_rn, ...), which the compiler never contracts or reorders. Left to -fmad, whether a*b + c
// becomes one FMA is the compiler's choice per instantiation, and the gradient-source instantiations must give the
// fp32 one's bits (Notes [Widening fused into the update] and [Low-rank gradients fused into the update]): a
// low-rank instantiation measured on an H200 rounded some AdamW or SGD parameters one ulp apart before this.
#include <cuda_fp16.h>

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "core/kernel_launch.cuh"
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

enum class GradSource { fp32, bf16, fp16, low_rank, packed_bf16 };

// The last of `count` ranges (sorted by offset, each with `offset` and `numel`) that starts at or before element e:
// `last` when it holds e (a thread's vectors come in increasing order), else found by binary search. Where the
// ranges leave gaps the caller checks that the range found holds e.
template <typename Range>
__device__ __forceinline__ int range_at_or_before(const Range* ranges, int count, long long e, int last) {
  if (last >= 0 && e >= ranges[last].offset && e < ranges[last].offset + ranges[last].numel) return last;
  int lo = 0, hi = count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (ranges[mid].offset <= e) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

template <int K>
__device__ __forceinline__ Float4 low_rank_grads(const float* grads, const LowRankGradients& lr, int64_t v,
                                                 int& piece_index) {
  const long long e0 = 4 * v;
  // Note [Low-rank gradients fused into the update]: the pieces tile the span, so the one found holds e0.
  piece_index = range_at_or_before(lr.pieces, lr.count, e0, piece_index);
  const LowRankPiece piece = lr.pieces[piece_index];
  if (piece.rank == 0) return load4(grads + e0);
  const float* pm = lr.p + piece.p_offset;
  const float* qm = lr.q + piece.q_offset;
  const long long e = e0 - piece.offset;
  Float4 g;
  float prow[K], qrow[K];
  if (piece.cols % 4 == 0) {  // one row: its P row read once
    const long long row = e / piece.cols, col = e % piece.cols;
    load_factor_row<K>(pm, row, piece.rank, 0, piece.rank, prow);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      load_factor_row<K>(qm, col + i, piece.rank, 0, piece.rank, qrow);
      g.v[i] = low_rank_product<K>(prow, qrow);
    }
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      load_factor_row<K>(pm, (e + i) / piece.cols, piece.rank, 0, piece.rank, prow);
      load_factor_row<K>(qm, (e + i) % piece.cols, piece.rank, 0, piece.rank, qrow);
      g.v[i] = low_rank_product<K>(prow, qrow);
    }
  }
  return g;
}

// Note [bf16 weight gradients in their fp32 slots] (model_cuda/cuda_model.hpp): the four gradients at vector v of
// a buffer with bf16 regions. `region` caches the last region found (a thread's vectors come in increasing order;
// the regions are whole weight matrices, far larger than a grid's stride), else a binary search finds it.
__device__ __forceinline__ Float4 packed_bf16_grads(const float* grads, const PackedBf16Gradients& packed, int64_t v,
                                                    int& region) {
  const long long e = packed.span_begin + 4 * v;
  region = range_at_or_before(packed.regions, packed.count, e, region);
  const PackedBf16Region r = packed.regions[region];
  if (e < r.offset || e >= r.offset + r.numel) return load4(grads + 4 * v);  // between regions: fp32
  const float* buffer = grads - packed.span_begin;
  const ushort4 w = reinterpret_cast<const ushort4*>(reinterpret_cast<const uint16_t*>(buffer + r.offset) +
                                                     (e - r.offset))[0];
  Float4 g;
  g.v[0] = __bfloat162float(__ushort_as_bfloat16(w.x));
  g.v[1] = __bfloat162float(__ushort_as_bfloat16(w.y));
  g.v[2] = __bfloat162float(__ushort_as_bfloat16(w.z));
  g.v[3] = __bfloat162float(__ushort_as_bfloat16(w.w));
  return g;
}

// Four gradients at vector v, widened to fp32 (exact for both 16-bit formats) or evaluated from factors.
template <GradSource kSource, int K>
__device__ __forceinline__ Float4 load_grads(const float* grads, const ReducedGradients& wire, int64_t v, int& piece) {
  if constexpr (kSource == GradSource::fp32) {
    return load4(grads + 4 * v);
  } else if constexpr (kSource == GradSource::low_rank) {
    return low_rank_grads<K>(grads, wire.low_rank, v, piece);
  } else if constexpr (kSource == GradSource::packed_bf16) {
    return packed_bf16_grads(grads, wire.packed_bf16, v, piece);
  } else {
    const ushort4 w = reinterpret_cast<const ushort4*>(wire.data)[v];
    const uint16_t raw[4] = {w.x, w.y, w.z, w.w};
    Float4 g;
#pragma unroll
    for (int i = 0; i < 4; ++i)
      g.v[i] = kSource == GradSource::bf16 ? __bfloat162float(__ushort_as_bfloat16(raw[i]))
                                           : __half2float(__ushort_as_half(raw[i]));
    return g;
  }
}

template <GradSource kSource, int K = 1>
__global__ void sgd_kernel(float* params, const float* grads, float* momentum_buffer, __nv_bfloat16* low,
                           int64_t vectors, SgdUpdate u) {
  begin_after_producer();
  const float lr = u.lr_on_device != nullptr ? *u.lr_on_device : u.lr;
  int piece = -1;
  for (int64_t v = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; v < vectors;
       v += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    Float4 p = load4(params + 4 * v), g = load_grads<kSource, K>(grads, u.reduced, v, piece);
    note_nonfinite(u.nonfinite_gradient, u.offset_base, g, v);
    // Every operation spelled as the intrinsic it is (Note [Update arithmetic spelled out]).
#pragma unroll
    for (int i = 0; i < 4; ++i) g.v[i] = __fmaf_rn(u.weight_decay, p.v[i], g.v[i]);
    if (u.momentum != 0.f) {
      Float4 buf = u.first_step ? g : load4(momentum_buffer + 4 * v);
      if (!u.first_step) {
#pragma unroll
        for (int i = 0; i < 4; ++i)
          buf.v[i] = __fmaf_rn(u.momentum, buf.v[i], __fmul_rn(1.f - u.dampening, g.v[i]));
      }
      store4(momentum_buffer + 4 * v, buf);
#pragma unroll
      for (int i = 0; i < 4; ++i) g.v[i] = u.nesterov ? __fmaf_rn(u.momentum, buf.v[i], g.v[i]) : buf.v[i];
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) p.v[i] = __fmaf_rn(-lr, g.v[i], p.v[i]);
    store4(params + 4 * v, p);
    if (low) store4(low + 4 * v, p);
  }
}

template <GradSource kSource, int K = 1>
__global__ void adamw_kernel(float* params, const float* grads, float* exp_avg, float* exp_avg_sq,
                             __nv_bfloat16* low, int64_t vectors, AdamWUpdate u) {
  begin_after_producer();
  const float decay = 1.f - u.lr * u.weight_decay, step_size = u.lr / u.bias_correction1;
  int piece = -1;
  for (int64_t v = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; v < vectors;
       v += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    Float4 p = load4(params + 4 * v), g = load_grads<kSource, K>(grads, u.reduced, v, piece), m = load4(exp_avg + 4 * v),
           s = load4(exp_avg_sq + 4 * v);
    note_nonfinite(u.nonfinite_gradient, u.offset_base, g, v);
    // Every operation spelled as the intrinsic it is (Note [Update arithmetic spelled out]).
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      p.v[i] = __fmul_rn(p.v[i], decay);
      m.v[i] = __fmaf_rn(1.f - u.beta1, __fsub_rn(g.v[i], m.v[i]), m.v[i]);
      s.v[i] = __fmaf_rn(u.beta2, s.v[i], __fmul_rn(__fmul_rn(1.f - u.beta2, g.v[i]), g.v[i]));
      const float denominator = __fadd_rn(__fdiv_rn(__fsqrt_rn(s.v[i]), u.bias_correction2_sqrt), u.eps);
      p.v[i] = __fsub_rn(p.v[i], __fdiv_rn(__fmul_rn(step_size, m.v[i]), denominator));
    }
    store4(params + 4 * v, p);
    store4(exp_avg + 4 * v, m);
    store4(exp_avg_sq + 4 * v, s);
    if (low) store4(low + 4 * v, p);
  }
}

__global__ void cast_kernel(const float* in, __nv_bfloat16* out, int64_t vectors) {
  begin_after_producer();
  for (int64_t v = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; v < vectors;
       v += static_cast<int64_t>(gridDim.x) * blockDim.x)
    store4(out + 4 * v, load4(in + 4 * v));
}

void check_count(int64_t n, const char* what) {
  DDPX_REQUIRE(n >= 0 && n % 4 == 0, "{}: element count {} must be a multiple of 4", what, n);
}

GradSource source_of(const ReducedGradients& wire) {
  if (wire.low_rank.pieces != nullptr) return GradSource::low_rank;
  if (wire.packed_bf16.regions != nullptr) return GradSource::packed_bf16;
  return wire.data == nullptr ? GradSource::fp32 : wire.format == WireFormat::fp16 ? GradSource::fp16 : GradSource::bf16;
}

void check_sources(const float* grads, const ReducedGradients& wire, const char* what) {
  DDPX_INTERNAL_ASSERT(grads != nullptr || wire.data != nullptr, "{}: no gradients (neither fp32 nor wire)", what);
  DDPX_INTERNAL_ASSERT(reinterpret_cast<uintptr_t>(wire.data) % 8 == 0,
                       "{}: 16-bit gradients at {} are not 8-byte aligned (4-element vectors)", what,
                       static_cast<const void*>(wire.data));
  if (wire.packed_bf16.regions != nullptr)
    DDPX_INTERNAL_ASSERT(wire.data == nullptr && wire.low_rank.pieces == nullptr && grads != nullptr &&
                             wire.packed_bf16.count > 0 && wire.packed_bf16.span_begin % 4 == 0,
                         "{}: packed bf16 gradients need the fp32 buffer, no other source, regions and a 4-aligned "
                         "span", what);
  if (wire.low_rank.pieces == nullptr) return;
  DDPX_INTERNAL_ASSERT(wire.data == nullptr && grads != nullptr && wire.low_rank.count > 0,
                       "{}: low-rank gradients need the fp32 buffer (plain pieces) and no 16-bit source", what);
  const int k = wire.low_rank.width;
  DDPX_INTERNAL_ASSERT(k == 1 || k == 2 || k == 4 || k == 8, "{}: low-rank width {} is not 1, 2, 4 or 8", what, k);
}

// Launches kernel<kSource, K> for the update's source; `launch` takes the kernel and enqueues it.
template <template <GradSource, int> class Kernels, typename Launch>
void for_source(const ReducedGradients& wire, Launch&& launch) {
  switch (source_of(wire)) {
    case GradSource::fp32: launch(Kernels<GradSource::fp32, 1>::get()); break;
    case GradSource::bf16: launch(Kernels<GradSource::bf16, 1>::get()); break;
    case GradSource::fp16: launch(Kernels<GradSource::fp16, 1>::get()); break;
    case GradSource::packed_bf16: launch(Kernels<GradSource::packed_bf16, 1>::get()); break;
    case GradSource::low_rank:
      switch (wire.low_rank.width) {
        case 1: launch(Kernels<GradSource::low_rank, 1>::get()); break;
        case 2: launch(Kernels<GradSource::low_rank, 2>::get()); break;
        case 4: launch(Kernels<GradSource::low_rank, 4>::get()); break;
        default: launch(Kernels<GradSource::low_rank, 8>::get()); break;
      }
      break;
  }
}

template <GradSource kSource, int K>
struct SgdKernels {
  static auto get() { return sgd_kernel<kSource, K>; }
};
template <GradSource kSource, int K>
struct AdamWKernels {
  static auto get() { return adamw_kernel<kSource, K>; }
};

}  // namespace

void sgd_update(float* params, const float* grads, float* momentum_buffer, __nv_bfloat16* low_copy, int64_t n,
                const SgdUpdate& update, cudaStream_t stream) {
  check_count(n, "sgd_update");
  DDPX_REQUIRE(update.momentum == 0.f || momentum_buffer != nullptr,
               "sgd_update: momentum {} needs a momentum buffer", update.momentum);
  check_sources(grads, update.reduced, "sgd_update");
  if (n == 0) return;
  const unsigned blocks = kernels::elementwise_blocks(n / 4, kThreads);
  for_source<SgdKernels>(update.reduced, [&](auto kernel) {
    launch_after_producer("sgd_kernel", kernel, blocks, kThreads, 0, stream, params, grads, momentum_buffer, low_copy,
                          n / 4, update);
  });
}

void adamw_update(float* params, const float* grads, float* exp_avg, float* exp_avg_sq, __nv_bfloat16* low_copy,
                  int64_t n, const AdamWUpdate& update, cudaStream_t stream) {
  check_count(n, "adamw_update");
  check_sources(grads, update.reduced, "adamw_update");
  if (n == 0) return;
  const unsigned blocks = kernels::elementwise_blocks(n / 4, kThreads);
  for_source<AdamWKernels>(update.reduced, [&](auto kernel) {
    launch_after_producer("adamw_kernel", kernel, blocks, kThreads, 0, stream, params, grads, exp_avg, exp_avg_sq,
                          low_copy, n / 4, update);
  });
}

void cast_to_bf16(const float* in, __nv_bfloat16* out, int64_t n, cudaStream_t stream) {
  check_count(n, "cast_to_bf16");
  if (n == 0) return;
  launch_after_producer("cast_kernel", cast_kernel, kernels::elementwise_blocks(n / 4, kThreads), kThreads, 0, stream,
                        in, out, n / 4);
}

}  // namespace ddpx
