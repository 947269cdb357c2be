// Transpose of a row-major fp32 matrix: out[c * ld_out + r] = in[r * ld_in + c] for r < rows, c < cols. Exact
// (a copy), nothing allocated, one kernel on `stream` (capturable). Tiles of 32 x 32 staged through shared memory, so
// both the reads and the writes are coalesced. in and out must not overlap.
// Used where a TF32 product wants its reduction dimension contiguous: cuBLASLt's TF32 kernels on Hopper run about
// 1.4x faster when an operand is K-major (see the CUDA ViT's weight gradients, Note [K-major TF32 weight gradients]).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace ddpx {

void transpose(const float* in, int64_t rows, int64_t cols, int64_t ld_in, float* out, int64_t ld_out,
               cudaStream_t stream);

}  // namespace ddpx
