// row_kernel_timing: microseconds per call of the memory-bound kernels between a ViT layer's matrix products
// (LayerNorm forward and backward, GELU forward and backward, the position-embedding column sum) at ViT-L/32's and
// ViT-B/16's bf16 shapes, as the training step calls them; a measurement tool, not a test. Each figure is the
// median of 7 batches of 20 back-to-back calls timed with CUDA events. "cold": the calls rotate over enough copies
// of the operands that none is in L2 when its call starts (more than twice the L2 size); "L2-hot": every call
// reuses one copy, which stays in L2 where it fits (the step sees something in between: the product just before
// a kernel leaves its output in L2). Usage: row_kernel_timing [--batches 7]
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <vector>

#include "core/cuda_check.hpp"
#include "cuda_timing.hpp"
#include "kernels/column_sum.hpp"
#include "kernels/gelu.hpp"
#include "kernels/layernorm.hpp"
#include "model_cuda/device_buffer.hpp"

namespace {

using namespace ddpx;
using bf16 = __nv_bfloat16;
constexpr int kCallsPerBatch = 20;

// Median per-call microseconds of `call(copy)` over `batches` batches of kCallsPerBatch calls, copies used
// round-robin; each batch is timed by bench::median_us as one call.
template <typename Call>
double per_call_us(int batches, int copies, Call&& call) {
  for (int i = 0; i < copies + 2; ++i) call(i % copies);  // warm-up
  int next = 0;
  const double batch_us = bench::median_us(batches, [&] {
    for (int i = 0; i < kCallsPerBatch; ++i) call(next++ % copies);
  });
  DDPX_CUDA_CHECK(cudaGetLastError());
  return batch_us / kCallsPerBatch;
}

// Copies of `bytes_per_copy` needed so that the rotation exceeds twice the L2 size.
int cold_copies(size_t bytes_per_copy) {
  int device = 0, l2 = 0;
  DDPX_CUDA_CHECK(cudaGetDevice(&device));
  DDPX_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  return static_cast<int>(std::min<size_t>(16, 2 * static_cast<size_t>(l2) / bytes_per_copy + 1));
}

struct LayerOperands {  // one copy of what a layer's LayerNorm and GELU read and write
  DeviceBuffer<float> x, dx, mean, rstd;
  DeviceBuffer<bf16> dy, y, dx_copy, hidden, hidden_grad;  // dy: the bf16 input gradient of the next matmul
  LayerOperands(int64_t rows, int64_t dim, int64_t mlp, uint64_t seed)
      : x(rows * dim, "x"), dx(rows * dim, "dx"), mean(rows, "mean"), rstd(rows, "rstd"), dy(rows * dim, "dy"),
        y(rows * dim, "y"), dx_copy(rows * dim, "dx_copy"), hidden(rows * mlp, "hidden"),
        hidden_grad(rows * mlp, "hidden_grad") {
    bench::fill_uniform(x.get(), rows * dim, seed);
    bench::fill_uniform(dy.get(), rows * dim, seed + 1);
    bench::fill_uniform(dx.get(), rows * dim, seed + 2);
    bench::fill_uniform(hidden.get(), rows * mlp, seed + 3);
    bench::fill_uniform(hidden_grad.get(), rows * mlp, seed + 4);
  }
};

void time_shape(const char* name, int64_t rows, int64_t dim, int64_t mlp, int batches) {
  const size_t copy_bytes = static_cast<size_t>(rows) * (dim * (2 * 4 + 3 * 2) + mlp * 2 * 2);
  const int copies = cold_copies(copy_bytes);
  std::vector<std::unique_ptr<LayerOperands>> ops;
  for (int c = 0; c < copies; ++c) ops.push_back(std::make_unique<LayerOperands>(rows, dim, mlp, 10 * c + 1));
  DeviceBuffer<float> gamma(dim, "gamma"), beta(dim, "beta"), dgamma(dim, "dgamma"), dbeta(dim, "dbeta"),
      dx_sum(dim, "dx_sum"), bias_grad(mlp, "bias_grad");
  bench::fill_uniform(gamma.get(), dim, 7);
  bench::fill_uniform(beta.get(), dim, 8);
  DeviceBuffer<float> ln_scratch(layernorm_backward_scratch_floats(rows, dim), "ln scratch"),
      gelu_scratch(gelu_backward_scratch_floats(rows, mlp), "gelu scratch");
  auto ln_forward = [&](int c) {
    LayerNormForwardArgs<bf16> f;
    f.x = ops[c]->x.get(), f.ld_x = dim, f.gamma = gamma.get(), f.beta = beta.get(), f.y = ops[c]->y.get();
    f.ld_y = dim, f.mean = ops[c]->mean.get(), f.rstd = ops[c]->rstd.get(), f.rows = rows, f.dim = dim;
    layernorm_forward(f, nullptr);
  };
  for (int c = 0; c < copies; ++c) ln_forward(c);  // statistics for the backward
  auto ln_backward = [&](int c) {  // as a pre-norm block calls it: accumulate, bf16 copy, the bias column sum
    LayerNormBackwardArgs<bf16> b;
    b.x = ops[c]->x.get(), b.ld_x = dim, b.mean = ops[c]->mean.get(), b.rstd = ops[c]->rstd.get();
    b.gamma = gamma.get(), b.dy = ops[c]->dy.get(), b.ld_dy = dim, b.dx = ops[c]->dx.get();
    b.dx_copy = ops[c]->dx_copy.get(), b.ld_dx = dim, b.accumulate = true, b.dgamma = dgamma.get();
    b.dbeta = dbeta.get(), b.dx_column_sum = dx_sum.get(), b.overwrite_param_grads = true, b.rows = rows;
    b.dim = dim, b.scratch = ln_scratch.get(), b.scratch_floats = ln_scratch.size();
    layernorm_backward(b, nullptr);
  };
  auto gelu_forward_call = [&](int c) {
    // out into hidden_grad's storage: the same bytes as the step's activation buffer
    gelu_forward<bf16>(ops[c]->hidden.get(), ops[c]->hidden_grad.get(), rows * mlp, nullptr);
  };
  auto gelu_backward_call = [&](int c) {
    gelu_backward<bf16>(ops[c]->hidden.get(), ops[c]->hidden_grad.get(), rows, mlp, bias_grad.get(),
                        gelu_scratch.get(), gelu_scratch.size(), nullptr, true);
  };
  std::printf("%s (%lld rows, width %lld, MLP %lld; %d copies for cold)\n", name, static_cast<long long>(rows),
              static_cast<long long>(dim), static_cast<long long>(mlp), copies);
  std::printf("  %-22s %10s %10s\n", "kernel", "cold us", "L2-hot us");
  const std::pair<const char*, std::function<void(int)>> rows_to_time[] = {
      {"layernorm_forward", ln_forward},
      {"layernorm_backward", ln_backward},
      {"gelu_forward", gelu_forward_call},
      {"gelu_backward", gelu_backward_call}};
  for (const auto& [kernel, call] : rows_to_time)
    std::printf("  %-22s %10.2f %10.2f\n", kernel, per_call_us(batches, copies, call), per_call_us(batches, 1, call));
}

// The position-embedding gradient: the batch's token gradients summed over images (batch rows x tokens*width).
void time_position_sum(int64_t batch, int64_t columns, int batches) {
  const int copies = cold_copies(static_cast<size_t>(batch * columns) * 4);
  std::vector<std::unique_ptr<DeviceBuffer<float>>> in;
  for (int c = 0; c < copies; ++c) {
    in.push_back(std::make_unique<DeviceBuffer<float>>(batch * columns, "tokens' gradient"));
    bench::fill_uniform(in.back()->get(), batch * columns, 20 + c);
  }
  DeviceBuffer<float> out(columns, "pos grad"), scratch(column_sum_scratch_floats(columns), "scratch");
  auto call = [&](int c) {
    ColumnSumArgs<float> a;
    a.in = in[c]->get(), a.ld = columns, a.rows = batch, a.cols = columns, a.outputs[0] = out.get();
    a.overwrite = true, a.scratch = scratch.get(), a.scratch_floats = scratch.size();
    column_sum_add(a, nullptr);
  };
  std::printf("  %-22s %10.2f %10.2f   (%lld x %lld)\n", "column_sum", per_call_us(batches, copies, call),
              per_call_us(batches, 1, call), static_cast<long long>(batch), static_cast<long long>(columns));
}

}  // namespace

int main(int argc, char** argv) {
  int batches = 7;
  for (int i = 1; i + 1 < argc; i += 2)
    if (std::strcmp(argv[i], "--batches") == 0) batches = std::max(1, std::atoi(argv[i + 1]));
  try {
    time_shape("vit_l_32 b32 bf16", 32 * 50, 1024, 4096, batches);
    time_position_sum(32, 50 * 1024, batches);
    time_shape("vit_b_16 b256 bf16", 256 * 197, 768, 3072, batches);
    time_position_sum(256, 197 * 768, batches);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "row_kernel_timing: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
