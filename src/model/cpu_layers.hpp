// CPU building blocks shared by the model families' reference implementations: row-major BLAS gemm, Linear
// forward/backward (torch's W [out, in]) and exact-erf GELU, for float and double.
// Guarantees: linear_backward ADDS into the weight and bias gradients and OVERWRITES dx (unless it is null); bias gradients are column
// sums accumulated in double for both types, so results do not depend on the batch's split into rows beyond
// float rounding of the final sum. Header-only (templates); matmuls go through OpenBLAS (cblas).
#pragma once
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace ddpx::cpu_layers {

// Row-major C[m, n] = alpha * op(A)[m, k] * op(B)[k, n] + beta * C.
inline void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
              static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}
inline void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
              static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

// y[rows, out] = x[rows, in] W[out, in]^T + bias[out].
template <typename T>
void linear_forward(const T* x, int64_t rows, int64_t in, const T* weight, const T* bias, int64_t out, T* y) {
  for (int64_t r = 0; r < rows; ++r) std::copy(bias, bias + out, y + r * out);
  gemm(false, true, rows, out, in, T(1), x, in, weight, in, T(1), y, out);
}

// grad_weight += dy^T x; grad_bias += column sums of dy; dx = dy W (overwritten; skipped when dx is null).
template <typename T>
void linear_backward(const T* x, int64_t rows, int64_t in, const T* weight, const T* dy, int64_t out,
                     T* grad_weight, T* grad_bias, T* dx) {
  gemm(true, false, out, in, rows, T(1), dy, out, x, in, T(1), grad_weight, in);
  std::vector<double> column_sums(static_cast<size_t>(out), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < out; ++j) column_sums[j] += dy[r * out + j];
  for (int64_t j = 0; j < out; ++j) grad_bias[j] += static_cast<T>(column_sums[j]);
  if (dx != nullptr) gemm(false, false, rows, in, out, T(1), dy, out, weight, in, T(0), dx, in);
}

// Exact (erf) GELU, torch.nn.GELU(approximate='none').
template <typename T>
T gelu(T x) {
  return T(0.5) * x * (T(1) + std::erf(x * T(M_SQRT1_2)));
}
template <typename T>
T gelu_derivative(T x) {
  const T cdf = T(0.5) * (T(1) + std::erf(x * T(M_SQRT1_2)));
  const T pdf = std::exp(T(-0.5) * x * x) * T(0.5 * M_2_SQRTPI * M_SQRT1_2);  // 1/sqrt(2 pi)
  return cdf + x * pdf;
}

}  // namespace ddpx::cpu_layers
