// Fused scale+cast and widen kernels for CastHook; grid-stride loops, 4 elements per thread per iteration.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/cuda_check.hpp"
#include "core/error.hpp"
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

template <WireFormat kFormat>
__global__ void scale_to_wire_kernel(const float* __restrict__ in, uint16_t* __restrict__ out, size_t count,
                                     float scale) {
  size_t stride = size_t{gridDim.x} * blockDim.x;
  for (size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < count; i += stride)
    out[i] = narrow<kFormat>(in[i] * scale);
}

template <WireFormat kFormat>
__global__ void widen_from_wire_kernel(const uint16_t* __restrict__ in, float* __restrict__ out, size_t count) {
  size_t stride = size_t{gridDim.x} * blockDim.x;
  for (size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < count; i += stride)
    out[i] = widen<kFormat>(in[i]);
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
  if (format == WireFormat::fp16)
    scale_to_wire_kernel<WireFormat::fp16><<<blocks_for(count), kThreads, 0, s>>>(in, out, count, scale);
  else
    scale_to_wire_kernel<WireFormat::bf16><<<blocks_for(count), kThreads, 0, s>>>(in, out, count, scale);
  DDPX_CHECK_LAUNCH("cast hook: scale+cast");
}

void launch_widen_from_wire_format(const uint16_t* in, float* out, size_t count, WireFormat format, void* stream) {
  if (count == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  if (format == WireFormat::fp16)
    widen_from_wire_kernel<WireFormat::fp16><<<blocks_for(count), kThreads, 0, s>>>(in, out, count);
  else
    widen_from_wire_kernel<WireFormat::bf16><<<blocks_for(count), kThreads, 0, s>>>(in, out, count);
  DDPX_CHECK_LAUNCH("cast hook: widen");
}

}  // namespace ddpx
