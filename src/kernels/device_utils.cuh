// Device helpers shared by the kernel files: float <-> storage-type conversion, 4-wide vector access, raw 8- and
// 16-byte packs, warp reductions and the grid sizes fixed by the reference SM count. Guarantee: arithmetic is fp32
// whatever the storage type (float or __nv_bfloat16); 4-wide accesses need 4-element-aligned indices (16 bytes for
// float, 8 for bf16); a Pack needs its own width's alignment.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace ddpx::kernels {

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

struct Float4 {
  float v[4];
};

__device__ __forceinline__ Float4 load4(const float* p) {
  float4 x = *reinterpret_cast<const float4*>(p);
  return {{x.x, x.y, x.z, x.w}};
}
__device__ __forceinline__ Float4 load4(const __nv_bfloat16* p) {
  uint2 raw = *reinterpret_cast<const uint2*>(p);
  __nv_bfloat162 lo = *reinterpret_cast<__nv_bfloat162*>(&raw.x);
  __nv_bfloat162 hi = *reinterpret_cast<__nv_bfloat162*>(&raw.y);
  float2 a = __bfloat1622float2(lo), b = __bfloat1622float2(hi);
  return {{a.x, a.y, b.x, b.y}};
}
__device__ __forceinline__ void store4(float* p, const Float4& f) {
  *reinterpret_cast<float4*>(p) = make_float4(f.v[0], f.v[1], f.v[2], f.v[3]);
}
__device__ __forceinline__ void store4(__nv_bfloat16* p, const Float4& f) {
  __nv_bfloat162 lo = __floats2bfloat162_rn(f.v[0], f.v[1]);
  __nv_bfloat162 hi = __floats2bfloat162_rn(f.v[2], f.v[3]);
  uint2 raw;
  raw.x = *reinterpret_cast<uint32_t*>(&lo);
  raw.y = *reinterpret_cast<uint32_t*>(&hi);
  *reinterpret_cast<uint2*>(p) = raw;
}

// kBytes (16 or 8) of T (float or __nv_bfloat16) held as raw words until they are computed on: 16 bytes of bf16
// are 8 values in 4 registers, so a thread keeps twice the bytes in flight that widened floats would allow.
template <typename T, int kBytes>
struct Pack {
  static_assert(kBytes == 16 || kBytes == 8, "a Pack is 8 or 16 bytes");
  static constexpr int kWords = kBytes / 4;
  static constexpr int kElements = kBytes / static_cast<int>(sizeof(T));
  uint32_t word[kWords];

  __device__ __forceinline__ void load(const T* p) {
    if constexpr (kWords == 4) {
      const uint4 r = *reinterpret_cast<const uint4*>(p);
      word[0] = r.x, word[1] = r.y, word[2] = r.z, word[3] = r.w;
    } else {
      const uint2 r = *reinterpret_cast<const uint2*>(p);
      word[0] = r.x, word[1] = r.y;
    }
  }
  __device__ __forceinline__ void store(T* p) const {
    if constexpr (kWords == 4) *reinterpret_cast<uint4*>(p) = make_uint4(word[0], word[1], word[2], word[3]);
    else *reinterpret_cast<uint2*>(p) = make_uint2(word[0], word[1]);
  }
  __device__ __forceinline__ float get(int i) const {
    if constexpr (std::is_same_v<T, float>) return __uint_as_float(word[i]);
    else return __uint_as_float(i % 2 ? word[i / 2] & 0xffff0000u : word[i / 2] << 16);  // element 0 is the low half
  }
  __device__ __forceinline__ void set(int i, float v) {
    if constexpr (std::is_same_v<T, float>) {
      word[i] = __float_as_uint(v);
    } else {
      const uint32_t b = __bfloat16_as_ushort(__float2bfloat16_rn(v));
      word[i / 2] = i % 2 ? (word[i / 2] & 0xffffu) | (b << 16) : (word[i / 2] & 0xffff0000u) | b;
    }
  }
};

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// The SM count of an H100 or H200 (SXM), the GPUs the grids are tuned for: a grid of kReferenceSms blocks of a
// one-block-per-SM kernel is one wave there. Kernels whose partial sums follow their grid size it with this
// constant rather than the device's SM count, so their sums, and therefore their bits, are the same on every GPU.
constexpr int kReferenceSms = 132;

// Grid size for elementwise kernels: enough blocks to fill the GPU a few times over, never more than the work.
inline unsigned elementwise_blocks(int64_t work_items, int threads) {
  int64_t blocks = (work_items + threads - 1) / threads;
  const int64_t cap = kReferenceSms * 8;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > cap ? cap : blocks));
}

}  // namespace ddpx::kernels
