// Tiled transpose; see transpose.hpp. Block = 32 x 8 threads over a 32 x 32 tile: each thread reads 4 rows of a
// column of the tile (coalesced along the input's rows), the tile (padded to 33 columns: no bank conflicts) is
// written out along the output's rows.
#include "kernels/transpose.hpp"

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "core/kernel_launch.cuh"

namespace ddpx {
namespace {

constexpr int kTile = 32, kRowsPerPass = 8;

__global__ void transpose_kernel(const float* in, int64_t rows, int64_t cols, int64_t ld_in, float* out,
                                 int64_t ld_out) {
  __shared__ float tile[kTile][kTile + 1];
  begin_after_producer();
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * kTile, c0 = static_cast<int64_t>(blockIdx.x) * kTile;
#pragma unroll
  for (int i = threadIdx.y; i < kTile; i += kRowsPerPass) {
    const int64_t r = r0 + i, c = c0 + threadIdx.x;
    if (r < rows && c < cols) tile[i][threadIdx.x] = in[r * ld_in + c];
  }
  __syncthreads();
#pragma unroll
  for (int i = threadIdx.y; i < kTile; i += kRowsPerPass) {
    const int64_t c = c0 + i, r = r0 + threadIdx.x;
    if (r < rows && c < cols) out[c * ld_out + r] = tile[threadIdx.x][i];
  }
}

}  // namespace

void transpose(const float* in, int64_t rows, int64_t cols, int64_t ld_in, float* out, int64_t ld_out,
               cudaStream_t stream) {
  DDPX_REQUIRE(rows >= 0 && cols >= 0 && ld_in >= cols && ld_out >= rows,
               "transpose: {} x {} with leading dimensions {} (in) and {} (out) do not fit", rows, cols, ld_in,
               ld_out);
  if (rows == 0 || cols == 0) return;
  const dim3 grid(static_cast<unsigned>((cols + kTile - 1) / kTile), static_cast<unsigned>((rows + kTile - 1) / kTile));
  launch_after_producer("transpose_kernel", transpose_kernel, grid, dim3(kTile, kRowsPerPass), 0, stream, in, rows,
                        cols, ld_in, out, ld_out);
}

}  // namespace ddpx
