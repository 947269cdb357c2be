// Fused scale+cast and widen kernels for CastHook; grid-stride loops over 4-element vectors where aligned.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "core/kernel_launch.cuh"
#include "ddp/cast_kernels.hpp"

namespace ddpx {
namespace {

template <WireFormat kFormat>
__device__ uint16_t narrow(float value) {
  if constexpr (kFormat == WireFormat::fp16) return __half_as_ushort(__float2half_rn(value));
  else return __bfloat16_as_ushort(__float2bfloat16_rn(value));
}

template <WireFormat kFormat>
__device__ float widen(uint16_t value) {
  if constexpr (kFormat == WireFormat::fp16) return __half2float(__ushort_as_half(value));
  else return __bfloat162float(__ushort_as_bfloat16(value));
}

// 4 elements per thread per iteration (16-byte fp32 and 8-byte 16-bit accesses) when `vectorized`, which the
// launcher sets only for pointers aligned to those sizes; the last count % 4 elements, or all of them otherwise,
// one by one. Each element is computed the same way in both loops.
template <WireFormat kFormat>
__global__ void scale_to_wire_kernel(const float* __restrict__ in, uint16_t* __restrict__ out, size_t count,
                                     float scale, bool vectorized) {
  begin_after_producer();
  const size_t stride = size_t{gridDim.x} * blockDim.x, first = size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const size_t vectors = vectorized ? count / 4 : 0;
  for (size_t v = first; v < vectors; v += stride) {
    const float4 x = reinterpret_cast<const float4*>(in)[v];
    reinterpret_cast<ushort4*>(out)[v] = make_ushort4(narrow<kFormat>(x.x * scale), narrow<kFormat>(x.y * scale),
                                                      narrow<kFormat>(x.z * scale), narrow<kFormat>(x.w * scale));
  }
  for (size_t i = 4 * vectors + first; i < count; i += stride) out[i] = narrow<kFormat>(in[i] * scale);
}

template <WireFormat kFormat>
__global__ void widen_from_wire_kernel(const uint16_t* __restrict__ in, float* __restrict__ out, size_t count,
                                       bool vectorized) {
  begin_after_producer();
  const size_t stride = size_t{gridDim.x} * blockDim.x, first = size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const size_t vectors = vectorized ? count / 4 : 0;
  for (size_t v = first; v < vectors; v += stride) {
    const ushort4 x = reinterpret_cast<const ushort4*>(in)[v];
    reinterpret_cast<float4*>(out)[v] =
        make_float4(widen<kFormat>(x.x), widen<kFormat>(x.y), widen<kFormat>(x.z), widen<kFormat>(x.w));
  }
  for (size_t i = 4 * vectors + first; i < count; i += stride) out[i] = widen<kFormat>(in[i]);
}

bool vector_aligned(const void* fp32, const void* wire) {
  return reinterpret_cast<uintptr_t>(fp32) % 16 == 0 && reinterpret_cast<uintptr_t>(wire) % 8 == 0;
}

constexpr int kThreads = 256;

unsigned blocks_for(size_t count) {
  size_t blocks = (count + kThreads * 4 - 1) / (kThreads * 4);
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65535 ? 65535 : blocks));
}

}  // namespace

void launch_scale_to_wire_format(const float* in, uint16_t* out, size_t count, float scale, WireFormat format,
                                 void* stream) {
  if (count == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  const bool vectorized = vector_aligned(in, out);
  const auto kernel = format == WireFormat::fp16 ? scale_to_wire_kernel<WireFormat::fp16>
                                                 : scale_to_wire_kernel<WireFormat::bf16>;
  launch_after_producer("cast hook: scale+cast", kernel, blocks_for(count), kThreads, 0, s, in, out, count, scale,
                        vectorized);
}

void launch_widen_from_wire_format(const uint16_t* in, float* out, size_t count, WireFormat format, void* stream) {
  if (count == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  const bool vectorized = vector_aligned(out, in);
  const auto kernel = format == WireFormat::fp16 ? widen_from_wire_kernel<WireFormat::fp16>
                                                 : widen_from_wire_kernel<WireFormat::bf16>;
  launch_after_producer("cast hook: widen", kernel, blocks_for(count), kThreads, 0, s, in, out, count, vectorized);
}

}  // namespace ddpx
