// Column sums of a row-major matrix added into fp32 vectors: the reduction behind every bias gradient, the
// position-embedding and class-token gradients and LayerNorm's weight/bias gradients.
// Guarantees: outputs[c / segment][c % segment] += sum over rows of in[r*ld + c] (= instead of += with
// `overwrite`: the output's old contents are never read, so they may be anything; segment = cols by default:
// one output vector; LayerNorm's partials use 2 or 3 segments). The summation order is fixed by the shape alone,
// so results are bit-identical run to run (no atomics). fp32 accumulation. Needs scratch of
// column_sum_scratch_floats(cols) floats; enqueues one or two kernels on `stream`, allocates nothing. Several sums
// may share one kernel (ColumnSumBatch below).
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

// Column sums of several fp32 matrices summed by one kernel: a producer that would have called column_sum_add adds
// its job here instead, and column_sum_add_batch enqueues them all at once (a ViT block's four bias and LayerNorm
// parameter gradients: Note [A block's column sums in one kernel], model_cuda/vit/vit_cuda.cpp). Guarantees, per
// job: the sums column_sum_add gives on the same arguments, bit for bit wherever that takes one row split (up to
// 256 rows, or at least 2 x kReferenceSms blocks of 32 columns), and otherwise one fixed order (all rows in one
// pass), so the bits still follow the shape alone. No scratch. The caller keeps each job's input and outputs
// untouched between add and column_sum_add_batch (stream order does it when both are enqueued on that stream).
constexpr int kMaxColumnSumBatch = 8;

namespace detail {
// A call's outputs as checked (column_sum.cu checked_outputs): one vector per segment of `segment` columns. The
// kernels take it by value; ColumnSumBatch keeps it per job.
struct ColumnSumOutputs {
  float* vectors[kMaxColumnSumSegments];
  int64_t segment;
  bool overwrite;
};
}  // namespace detail

class ColumnSumBatch {
 public:
  // Checks the job as column_sum_add would (segments, outputs, input), and that the batch has room; the batch
  // keeps the checked form, so column_sum_add_batch checks nothing again.
  void add(const ColumnSumArgs<float>& job);
  int size() const { return count_; }
  void clear() { count_ = 0; }

 private:
  friend void column_sum_add_batch(ColumnSumBatch& batch, cudaStream_t stream);
  // A job as add() checked it.
  struct CheckedJob {
    const float* in;
    int64_t ld, rows, cols;
    detail::ColumnSumOutputs outputs;
  };
  CheckedJob jobs_[kMaxColumnSumBatch] = {};
  int count_ = 0;
};

// Enqueues one kernel for every job of the batch (nothing for an empty one) and empties it.
void column_sum_add_batch(ColumnSumBatch& batch, cudaStream_t stream);

}  // namespace ddpx
