// Column sums of a row-major matrix added into fp32 vectors: the reduction behind every bias gradient, the
// position-embedding and class-token gradients and LayerNorm's weight/bias gradients.
// Guarantees: outputs[c / segment][c % segment] += sum over rows of in[r*ld + c] (= instead of += with
// `overwrite`: the output's old contents are never read, so they may be anything; segment = cols by default:
// one output vector; LayerNorm's partials use 2 or 3 segments). The summation order is fixed by the shape alone, so results are
// bit-identical run to run (no atomics). fp32 accumulation. Needs scratch of column_sum_scratch_floats(cols)
// floats; enqueues one or two kernels on `stream`, allocates nothing.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace ddpx {

constexpr int kMaxColumnSumSegments = 3;

template <typename In>
struct ColumnSumArgs {
  const In* in = nullptr;
  int64_t ld = 0, rows = 0, cols = 0;
  int64_t segment = -1;  // width of each output segment; -1 = cols (a single output)
  float* outputs[kMaxColumnSumSegments] = {};
  bool overwrite = false;  // outputs = the sums (their old values unread) instead of outputs += the sums
  float* scratch = nullptr;
  size_t scratch_floats = 0;
};

size_t column_sum_scratch_floats(int64_t cols);

template <typename In>
void column_sum_add(const ColumnSumArgs<In>& args, cudaStream_t stream);

}  // namespace ddpx
