// LayerNorm forward/backward against double CPU loops on fresh random data, including strided rows (the class-token
// rows of the encoder output), accumulation into existing gradients and the fused column sums of dx.
// Widths up to 1024 are held in registers, wider ones streamed (layernorm.cu); both kinds are covered, and the
// backward's two row passes: 1 to 16 rows a block spread over one wave, and past one wave (held widths) the
// contiguous row runs that sum columns in shared memory; streamed widths past one wave take 8 rows a block.
// Tolerances (norm-wise relative): fp32 outputs and gradients 1e-5; bf16 outputs 8e-3 (one bf16 rounding). The
// incoming gradient dy has the Out type; the reference reads the same (rounded) values, so the fp32 gradients keep
// 1e-5 in both precisions.
#include <gtest/gtest.h>

#include "gpu_guard.hpp"
#include "kernel_test_utils.hpp"
#include "kernels/layernorm.hpp"

namespace ddpx {
namespace {

using testing::random_vector;
using testing::relative_error;

struct LnReference {
  std::vector<double> y, dx, dgamma, dbeta;
};

LnReference reference(const std::vector<float>& x, int64_t ld_x, const std::vector<float>& gamma,
                      const std::vector<float>& beta, const std::vector<float>& dy, int64_t rows, int64_t dim,
                      double eps) {
  LnReference r;
  r.y.assign(rows * dim, 0), r.dx.assign(rows * dim, 0), r.dgamma.assign(dim, 0), r.dbeta.assign(dim, 0);
  for (int64_t i = 0; i < rows; ++i) {
    const float* xr = x.data() + i * ld_x;
    double mean = 0, var = 0;
    for (int64_t c = 0; c < dim; ++c) mean += xr[c];
    mean /= dim;
    for (int64_t c = 0; c < dim; ++c) var += (xr[c] - mean) * (xr[c] - mean);
    const double rstd = 1.0 / std::sqrt(var / dim + eps);
    double sum_g = 0, sum_gx = 0;
    for (int64_t c = 0; c < dim; ++c) {
      const double xhat = (xr[c] - mean) * rstd, g = dy[i * dim + c] * gamma[c];
      r.y[i * dim + c] = xhat * gamma[c] + beta[c];
      sum_g += g, sum_gx += g * xhat;
      r.dgamma[c] += dy[i * dim + c] * xhat;
      r.dbeta[c] += dy[i * dim + c];
    }
    for (int64_t c = 0; c < dim; ++c) {
      const double xhat = (xr[c] - mean) * rstd, g = dy[i * dim + c] * gamma[c];
      r.dx[i * dim + c] = rstd * (g - sum_g / dim - xhat * sum_gx / dim);
    }
  }
  return r;
}

template <typename Out>
void check_layernorm(int64_t rows, int64_t dim, int64_t ld_x, bool accumulate, double y_tolerance, uint64_t seed,
                     bool sum_dx_columns = true, bool fold_later = false) {
  auto x = random_vector(rows * ld_x, seed, 2.0);
  for (auto& v : x) v += 0.5f;  // non-zero mean
  auto gamma = random_vector(dim, seed + 1, 0.3), beta = random_vector(dim, seed + 2, 0.3);
  for (auto& g : gamma) g += 1.f;
  auto dy = random_vector(rows * dim, seed + 3);
  // dy is Out-typed (the next matmul's input gradient): the reference takes the values the kernel reads.
  auto d_dy = testing::to_device<Out>(dy);
  dy = testing::to_host(d_dy);
  auto dx_start = random_vector(rows * ld_x, seed + 4), dgamma_start = random_vector(dim, seed + 5),
       dbeta_start = random_vector(dim, seed + 6);
  const LnReference want = reference(x, ld_x, gamma, beta, dy, rows, dim, 1e-6);

  auto d_x = testing::to_device<float>(x), d_gamma = testing::to_device<float>(gamma),
       d_beta = testing::to_device<float>(beta);
  auto d_y = testing::to_device<Out>(std::vector<float>(rows * dim, 9.f));
  DeviceBuffer<float> mean(rows, "mean"), rstd(rows, "rstd");
  LayerNormForwardArgs<Out> f;
  f.x = d_x.get(), f.ld_x = ld_x, f.gamma = d_gamma.get(), f.beta = d_beta.get(), f.y = d_y.get(), f.ld_y = dim;
  f.mean = mean.get(), f.rstd = rstd.get(), f.rows = rows, f.dim = dim, f.eps = 1e-6f;
  layernorm_forward(f, nullptr);
  EXPECT_LT(relative_error(testing::to_host(d_y), want.y), y_tolerance) << "forward y, rows " << rows << " dim " << dim;

  auto d_dx = testing::to_device<float>(dx_start);
  auto d_dx_copy = testing::to_device<Out>(std::vector<float>(rows * ld_x, 9.f));
  auto d_dgamma = testing::to_device<float>(dgamma_start), d_dbeta = testing::to_device<float>(dbeta_start);
  const auto dx_sum_start = random_vector(dim, seed + 7);
  auto d_dx_sum = testing::to_device<float>(dx_sum_start);
  const size_t scratch_floats = layernorm_backward_scratch_floats(rows, dim);
  DeviceBuffer<float> scratch(scratch_floats, "scratch");
  LayerNormBackwardArgs<Out> b;
  b.x = d_x.get(), b.ld_x = ld_x, b.mean = mean.get(), b.rstd = rstd.get(), b.gamma = d_gamma.get();
  b.dy = d_dy.get(), b.ld_dy = dim, b.dx = d_dx.get(), b.dx_copy = d_dx_copy.get(), b.ld_dx = ld_x;
  b.accumulate = accumulate, b.dgamma = d_dgamma.get(), b.dbeta = d_dbeta.get(), b.rows = rows, b.dim = dim;
  b.dx_column_sum = sum_dx_columns ? d_dx_sum.get() : nullptr;
  b.scratch = scratch.get(), b.scratch_floats = scratch_floats;
  ColumnSumBatch folds;
  if (fold_later) b.fold_into = &folds;
  layernorm_backward(b, nullptr);
  if (fold_later) {  // the parameter gradients wait for the batch, which then adds them
    EXPECT_EQ(testing::to_host(d_dgamma), dgamma_start) << "dgamma before the batch ran";
    EXPECT_EQ(folds.size(), 1);
    column_sum_add_batch(folds, nullptr);
    EXPECT_EQ(folds.size(), 0) << "column_sum_add_batch empties the batch";
  }

  std::vector<double> want_dx(rows * ld_x), want_dgamma(dim), want_dbeta(dim);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 0; c < ld_x; ++c)
      want_dx[i * ld_x + c] = (c < dim ? want.dx[i * dim + c] : 0.0) + (accumulate || c >= dim ? dx_start[i * ld_x + c] : 0.0);
  for (int64_t c = 0; c < dim; ++c)
    want_dgamma[c] = dgamma_start[c] + want.dgamma[c], want_dbeta[c] = dbeta_start[c] + want.dbeta[c];
  const auto got_dx = testing::to_host(d_dx);
  EXPECT_LT(relative_error(got_dx, want_dx), 1e-5) << "dx";
  // The copy holds the same values in Out precision on the rows' first dim columns.
  auto copy = testing::to_host(d_dx_copy);
  std::vector<double> copy_rows, want_rows;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 0; c < dim; ++c) copy_rows.push_back(copy[i * ld_x + c]), want_rows.push_back(got_dx[i * ld_x + c]);
  EXPECT_LT(relative_error(copy_rows, want_rows), y_tolerance) << "dx copy";
  EXPECT_LT(relative_error(testing::to_host(d_dgamma), want_dgamma), 1e-5) << "dgamma";
  EXPECT_LT(relative_error(testing::to_host(d_dbeta), want_dbeta), 1e-5) << "dbeta";
  std::vector<double> want_dx_sum(dx_sum_start.begin(), dx_sum_start.end());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 0; c < dim; ++c) want_dx_sum[c] += want_dx[i * ld_x + c];
  if (sum_dx_columns)
    EXPECT_LT(relative_error(testing::to_host(d_dx_sum), want_dx_sum), 1e-5) << "column sums of dx";
  else
    EXPECT_EQ(testing::to_host(d_dx_sum), dx_sum_start) << "dx_column_sum nullptr: nothing written";
}

TEST(LayerNorm, Fp32MatchesReference) {
  DDPX_REQUIRE_GPU();
  check_layernorm<float>(1600, 1024, 1024, true, 1e-5, 1);
  check_layernorm<float>(37, 32, 32, false, 1e-5, 2);
  check_layernorm<float>(13, 768, 768, true, 1e-5, 3);
  check_layernorm<float>(11, 260, 260, true, 1e-5, 7);     // held in 4 chunks, the last one partly
  check_layernorm<float>(21, 1028, 1028, true, 1e-5, 8);   // wider than the 1024 held in registers: streamed
  check_layernorm<float>(2113, 64, 64, true, 1e-5, 10);    // one row past a wave of 16-row blocks: row runs
  check_layernorm<float>(1587, 96, 96, true, 1e-5, 11);    // 13 rows a block, the last block one row
}

// Past one wave of 16-row blocks the backward's warps sum their rows' columns in shared memory (ViT-B/16 at batch
// 256: 50,432 rows of 768); runs of unequal length, a partly held width, strided rows, with and without accumulation.
TEST(LayerNorm, ManyRowsSumColumnsInTheRowPass) {
  DDPX_REQUIRE_GPU();
  check_layernorm<float>(5003, 768, 768, true, 1e-5, 12);
  check_layernorm<float>(2377, 1024, 1024, false, 1e-5, 13);
  check_layernorm<float>(2500, 768, 768, true, 1e-5, 17, /*sum_dx_columns=*/false);
  check_layernorm<float>(2200, 260, 520, true, 1e-5, 14);
  check_layernorm<float>(2150, 1028, 1028, true, 1e-5, 15);  // streamed: 8 rows a block
  check_layernorm<__nv_bfloat16>(4099, 768, 768, true, 8e-3, 16);
}

// With fold_into the column sums of the partial rows land when the caller's batch runs (vit_cuda.cpp: Note [A
// block's column sums in one kernel]): one wave, past one wave, streamed, and without dx's column sums.
TEST(LayerNorm, ColumnSumsFoldedInALaterBatch) {
  DDPX_REQUIRE_GPU();
  check_layernorm<float>(1600, 1024, 1024, true, 1e-5, 21, true, /*fold_later=*/true);
  check_layernorm<float>(5003, 768, 768, true, 1e-5, 22, true, true);
  check_layernorm<float>(2150, 1028, 1028, false, 1e-5, 23, false, true);
  check_layernorm<__nv_bfloat16>(200, 1024, 1024, true, 8e-3, 24, true, true);
}

TEST(LayerNorm, StridedRowsWithoutAccumulation) {
  DDPX_REQUIRE_GPU();
  check_layernorm<float>(6, 64, 64 * 17, false, 1e-5, 4);  // class-token rows of 17-token images
}

TEST(LayerNorm, Bf16OutputWithinOneRounding) {
  DDPX_REQUIRE_GPU();
  check_layernorm<__nv_bfloat16>(200, 1024, 1024, true, 8e-3, 5);
  check_layernorm<__nv_bfloat16>(9, 96, 96 * 5, false, 8e-3, 6);
  check_layernorm<__nv_bfloat16>(17, 2048, 2048, true, 8e-3, 9);  // streamed
}

}  // namespace
}  // namespace ddpx
