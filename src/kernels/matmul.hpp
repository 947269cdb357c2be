// Matmul: row-major GEMMs through cuBLASLt, with a preallocated workspace and one cached plan per shape.
// Guarantees:
//  - out[m,n] = alpha * op(a)[m,k] @ op(b)[k,n] + beta * c[m,n] (+ bias[n]), all matrices row-major with the
//    given leading dimensions; op(x) = x, or x^T when the operand is stored transposed. c may be out itself
//    (in-place accumulate) or another matrix of the same shape and leading dimension; c == nullptr means out.
//  - a and b have the engine's operand type; c, out and bias share the call's output type (fp32 or the operand
//    type). Accumulation is fp32; the compute mode is fixed at construction (pure fp32, TF32 or bf16 inputs).
//  - The first call of a shape (shape, leading dimensions, transposes, types, bias, pointer alignment) asks the
//    cuBLASLt heuristic for its top 16 candidates and, unless the stream is being captured, times them on the stream
//    (into a temporary output, so the call's own output is untouched; this synchronizes and allocates once) and
//    keeps the fastest (the heuristic's first unless another is at least 3% faster). The choice is shared by all
//    engines of the process (same shape, same mode -> same algorithm -> bit-identical results); set
//    DDPX_MATMUL_AUTOTUNE=0 to keep the heuristic's first. Later calls only enqueue cublasLtMatmul on the given
//    stream, so they are capturable in a CUDA graph and allocate nothing.
//  - Not thread-safe: one engine per thread/stream owner.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

namespace ddpx {

enum class MatmulMode { fp32, tf32, bf16 };  // operand types fp32/fp32/bf16; compute 32F/32F_FAST_TF32/32F

struct MatmulOperand {
  const void* data = nullptr;
  int64_t ld = 0;            // leading dimension of the stored (row-major) matrix
  bool transposed = false;   // stored as the transpose of the logical operand
};

struct MatmulCall {
  int64_t m = 0, n = 0, k = 0;
  MatmulOperand a, b;        // logical a: [m,k], logical b: [k,n]
  void* out = nullptr;       // [m,n], leading dimension ld_out
  int64_t ld_out = 0;
  bool out_fp32 = true;      // output (and c, bias) type: fp32, or the operand type when false
  float alpha = 1.f, beta = 0.f;
  const void* c = nullptr;   // used when beta != 0; nullptr = out
  const void* bias = nullptr;  // [n] added to every row, or nullptr
};

class MatmulEngine {
 public:
  static constexpr size_t kDefaultWorkspaceBytes = size_t(32) << 20;

  explicit MatmulEngine(MatmulMode mode, size_t workspace_bytes = kDefaultWorkspaceBytes);
  ~MatmulEngine();
  MatmulEngine(const MatmulEngine&) = delete;
  MatmulEngine& operator=(const MatmulEngine&) = delete;

  // Enqueues one GEMM on `stream`. `what` names the product in error messages (e.g. "block 3 fc1 forward").
  void run(const MatmulCall& call, cudaStream_t stream, const char* what);

  MatmulMode mode() const { return mode_; }
  size_t cached_plans() const { return plans_.size(); }

  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int, int>;

 private:
  struct Plan;
  Plan& plan_for(const MatmulCall& call, cudaStream_t stream, const char* what);
  int fastest_candidate(const MatmulCall& call, Plan& plan, const cublasLtMatmulHeuristicResult_t* candidates,
                        int count, cudaStream_t stream);

  MatmulMode mode_;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

}  // namespace ddpx
