// matmul_timing: TFLOP/s of the ViT-L/32 layer products through kernels/matmul.hpp, each in the operand layout the
// CUDA ViT issues it (forward x W^T, input gradient dy W, weight gradient dy^T x) and, beside it, the same shape
// with both operands stored K-major (a [m,k] and b^T [n,k] row-major), the layout Hopper's tensor-core
// instructions read directly for every type (TF32 wgmma reads only K-major operands from shared memory); a
// measurement tool, not a test. Fresh random operands, 5 warm-up calls, median of --repeat timed with CUDA events.
// --backward-pairs: each ViT block's backward pair (a layer's input gradient dy W and its weight gradient dy^T x,
// which read the same dy and do not depend on each other) timed one after the other on one stream and side by
// side on two streams (two engines, so each has its own cuBLASLt workspace), for ViT-L/32 and ViT-B/16 shapes.
// --weight-grad-outputs: every ViT-L/32 weight gradient in bf16 with an fp32 output and with a bf16 one (Note [bf16
// weight gradients in their fp32 slots], model_cuda/cuda_model.hpp), at batch --rows / 50 images.
// Usage: matmul_timing [--repeat 50] [--rows 1600] [--layouts-only | --backward-pairs | --weight-grad-outputs]
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/cuda_check.hpp"
#include "cuda_timing.hpp"
#include "kernels/matmul.hpp"
#include "kernels/transpose.hpp"
#include "model_cuda/device_buffer.hpp"

namespace {

using namespace ddpx;

using bench::fill_uniform;
using bench::median_us;

struct Product {
  const char* name;
  int64_t m, n, k;
  bool a_transposed, b_transposed;  // as the CUDA ViT issues it
};

// out[m, n] = a b in p's shape, a_t / b_t: that operand is stored as its transpose (MatmulOperand::transposed).
template <typename T>
void run_product(MatmulEngine& engine, const Product& p, const T* a, const T* b, float* out, bool a_t, bool b_t) {
  MatmulCall call;
  call.m = p.m, call.n = p.n, call.k = p.k;
  call.a = {a, a_t ? p.m : p.k, a_t};
  call.b = {b, b_t ? p.k : p.n, b_t};
  call.out = out, call.ld_out = p.n;
  engine.run(call, nullptr, p.name);
}

template <typename T>
void time_product(MatmulMode mode, const Product& p, int repeat) {
  DeviceBuffer<T> a(p.m * p.k, "a"), b(p.k * p.n, "b");
  DeviceBuffer<float> out(p.m * p.n, "out");
  fill_uniform(a.get(), p.m * p.k, 1);
  fill_uniform(b.get(), p.k * p.n, 2);
  MatmulEngine engine(mode);
  auto run = [&](bool a_t, bool b_t) { run_product(engine, p, a.get(), b.get(), out.get(), a_t, b_t); };
  for (int i = 0; i < 5; ++i) run(p.a_transposed, p.b_transposed), run(false, true);
  DDPX_CUDA_CHECK(cudaDeviceSynchronize());
  const double issued = median_us(repeat, [&] { run(p.a_transposed, p.b_transposed); });
  const double k_major = median_us(repeat, [&] { run(false, true); });
  const double flop = 2.0 * p.m * p.n * p.k;
  std::printf("%-4s %-22s m %5lld n %5lld k %5lld | as issued (a%s b%s) %7.1f us %4.0f TFLOP/s | K-major %7.1f us "
              "%4.0f TFLOP/s | %.2fx\n",
              mode == MatmulMode::bf16 ? "bf16" : mode == MatmulMode::tf32 ? "tf32" : "fp32", p.name,
              static_cast<long long>(p.m), static_cast<long long>(p.n), static_cast<long long>(p.k),
              p.a_transposed ? "^T" : "", p.b_transposed ? "^T" : "", issued, flop / issued * 1e-6, k_major,
              flop / k_major * 1e-6, issued / k_major);
}

// A weight gradient dW[m, n] = dy^T x (dy [k, m], x [k, n], k = tokens) with each operand stored either way: as
// issued (both with the tokens as the slow index), dy transposed first (a K-major), x transposed first (b K-major),
// both; and what transposing each costs (fp32).
void time_weight_gradient_layouts(const Product& p, int repeat) {
  DeviceBuffer<float> a(p.m * p.k, "a"), b(p.k * p.n, "b"), t(std::max(p.m, p.n) * p.k, "transposed");
  DeviceBuffer<float> out(p.m * p.n, "out");
  fill_uniform(a.get(), p.m * p.k, 1);
  fill_uniform(b.get(), p.k * p.n, 2);
  MatmulEngine engine(MatmulMode::tf32);
  auto run = [&](bool a_t, bool b_t) { run_product(engine, p, a.get(), b.get(), out.get(), a_t, b_t); };
  double us[4];
  for (int v = 0; v < 4; ++v) {
    const bool a_t = !(v & 1), b_t = (v & 2) != 0;
    for (int i = 0; i < 5; ++i) run(a_t, b_t);
    DDPX_CUDA_CHECK(cudaDeviceSynchronize());
    us[v] = median_us(repeat, [&] { run(a_t, b_t); });
  }
  const double dy_t = median_us(repeat, [&] { transpose(a.get(), p.k, p.m, p.m, t.get(), p.k, nullptr); });
  const double x_t = median_us(repeat, [&] { transpose(b.get(), p.k, p.n, p.n, t.get(), p.k, nullptr); });
  std::printf("tf32 %-22s as issued %6.1f us | dy^T K-major %6.1f | x K-major %6.1f | both %6.1f | transpose dy "
              "%5.1f us, x %5.1f us (%.0f GB/s)\n",
              p.name, us[0], us[1], us[2], us[3], dy_t, x_t, 2.0 * 4 * p.k * p.n / x_t * 1e-3);
}

// One layer's backward pair in bf16: dx[rows, k] = dy[rows, n] W (W [n, k], bf16 out) and dW[n, k] = dy^T x
// (x [rows, k], fp32 out), as the CUDA ViT issues them.
void time_backward_pair(const char* model, const char* layer, int64_t rows, int64_t n, int64_t k, int repeat) {
  using T = __nv_bfloat16;
  DeviceBuffer<T> dy(rows * n, "dy"), w(n * k, "W"), x(rows * k, "x"), dx(rows * k, "dx");
  DeviceBuffer<float> dw(n * k, "dW");
  fill_uniform(dy.get(), rows * n, 1);
  fill_uniform(w.get(), n * k, 2);
  fill_uniform(x.get(), rows * k, 3);
  MatmulEngine main_engine(MatmulMode::bf16), side_engine(MatmulMode::bf16);
  cudaStream_t main_stream = nullptr, side_stream = nullptr;
  DDPX_CUDA_CHECK(cudaStreamCreateWithFlags(&main_stream, cudaStreamNonBlocking));
  DDPX_CUDA_CHECK(cudaStreamCreateWithFlags(&side_stream, cudaStreamNonBlocking));
  cudaEvent_t fork, join;
  DDPX_CUDA_CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  DDPX_CUDA_CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  auto input_gradient = [&](MatmulEngine& e, cudaStream_t s) {
    MatmulCall call;
    call.m = rows, call.n = k, call.k = n;
    call.a = {dy.get(), n, false};
    call.b = {w.get(), k, false};
    call.out = dx.get(), call.ld_out = k, call.out_fp32 = false;
    e.run(call, s, "input gradient");
  };
  auto weight_gradient = [&](MatmulEngine& e, cudaStream_t s) {
    MatmulCall call;
    call.m = n, call.n = k, call.k = rows;
    call.a = {dy.get(), n, true};
    call.b = {x.get(), k, false};
    call.out = dw.get(), call.ld_out = k;
    e.run(call, s, "weight gradient");
  };
  auto serial = [&] { input_gradient(main_engine, main_stream), weight_gradient(main_engine, main_stream); };
  auto side_by_side = [&] {
    DDPX_CUDA_CHECK(cudaEventRecord(fork, main_stream));
    DDPX_CUDA_CHECK(cudaStreamWaitEvent(side_stream, fork, 0));
    weight_gradient(side_engine, side_stream);
    input_gradient(main_engine, main_stream);
    DDPX_CUDA_CHECK(cudaEventRecord(join, side_stream));
    DDPX_CUDA_CHECK(cudaStreamWaitEvent(main_stream, join, 0));
  };
  for (int i = 0; i < 5; ++i) serial(), side_by_side(), weight_gradient(side_engine, main_stream);
  DDPX_CUDA_CHECK(cudaDeviceSynchronize());
  const double input_us = median_us(repeat, [&] { input_gradient(main_engine, main_stream); }, main_stream);
  const double weight_us = median_us(repeat, [&] { weight_gradient(main_engine, main_stream); }, main_stream);
  const double serial_us = median_us(repeat, serial, main_stream);
  const double pair_us = median_us(repeat, side_by_side, main_stream);
  std::printf("bf16 %-8s %-5s rows %6lld n %5lld k %5lld | input grad %7.1f us | weight grad %7.1f us | one stream "
              "%7.1f us | two streams %7.1f us | saves %6.1f us (%4.1f%%)\n",
              model, layer, static_cast<long long>(rows), static_cast<long long>(n), static_cast<long long>(k),
              input_us, weight_us, serial_us, pair_us, serial_us - pair_us, 100.0 * (serial_us - pair_us) / serial_us);
  DDPX_CUDA_CHECK(cudaEventDestroy(fork));
  DDPX_CUDA_CHECK(cudaEventDestroy(join));
  DDPX_CUDA_CHECK(cudaStreamDestroy(main_stream));
  DDPX_CUDA_CHECK(cudaStreamDestroy(side_stream));
}

void time_backward_pairs(int repeat) {
  struct Shape {
    const char* model;
    int64_t rows, d, mlp;
  };
  for (const Shape& s : {Shape{"vit_l_32", 32 * 50, 1024, 4096}, Shape{"vit_b_16", 256 * 197, 768, 3072}}) {
    time_backward_pair(s.model, "fc2", s.rows, s.d, s.mlp, repeat);      // mlp.3: dy [rows, D], x [rows, M]
    time_backward_pair(s.model, "fc1", s.rows, s.mlp, s.d, repeat);      // mlp.0: dy [rows, M], x [rows, D]
    time_backward_pair(s.model, "proj", s.rows, s.d, s.d, repeat);       // out_proj
    time_backward_pair(s.model, "qkv", s.rows, 3 * s.d, s.d, repeat);    // in_proj: dy [rows, 3D], x [rows, D]
  }
}

// dW[m, n] = dy^T x (dy [k, m], x [k, n], k = tokens or images) written as fp32 and as bf16.
void time_weight_gradient_outputs(const Product& p, int repeat) {
  using T = __nv_bfloat16;
  DeviceBuffer<T> dy(p.k * p.m, "dy"), x(p.k * p.n, "x");
  DeviceBuffer<float> out(p.m * p.n, "dW");
  fill_uniform(dy.get(), p.k * p.m, 1);
  fill_uniform(x.get(), p.k * p.n, 2);
  MatmulEngine engine(MatmulMode::bf16);
  auto run = [&](bool fp32_out) {
    MatmulCall call;
    call.m = p.m, call.n = p.n, call.k = p.k;
    call.a = {dy.get(), p.m, true};
    call.b = {x.get(), p.n, false};
    call.out = out.get(), call.ld_out = p.n, call.out_fp32 = fp32_out;
    engine.run(call, nullptr, p.name);
  };
  for (int i = 0; i < 5; ++i) run(true), run(false);
  DDPX_CUDA_CHECK(cudaDeviceSynchronize());
  const double fp32_us = median_us(repeat, [&] { run(true); });
  const double bf16_us = median_us(repeat, [&] { run(false); });
  std::printf("bf16 %-26s m %5lld n %5lld k %5lld | fp32 out %7.1f us | bf16 out %7.1f us | %+6.1f us\n", p.name,
              static_cast<long long>(p.m), static_cast<long long>(p.n), static_cast<long long>(p.k), fp32_us,
              bf16_us, bf16_us - fp32_us);
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 50;
  int64_t rows = 1600;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--repeat") == 0) repeat = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--rows") == 0) rows = std::max(1, std::atoi(argv[i + 1]));
  }
  const int64_t D = 1024, M = 4096;
  const Product products[] = {
      {"qkv forward", rows, 3 * D, D, false, true},     {"fc1 forward", rows, M, D, false, true},
      {"fc2 forward", rows, D, M, false, true},         {"qkv input gradient", rows, D, 3 * D, false, false},
      {"fc1 input gradient", rows, D, M, false, false}, {"fc2 input gradient", rows, M, D, false, false},
      {"qkv weight gradient", 3 * D, D, rows, true, false}, {"fc1 weight gradient", M, D, rows, true, false},
      {"fc2 weight gradient", D, M, rows, true, false},
  };
  const Product weight_gradients[] = {{"qkv weight gradient", 3 * D, D, rows, true, false},
                                      {"proj weight gradient", D, D, rows, true, false},
                                      {"fc1 weight gradient", M, D, rows, true, false},
                                      {"fc2 weight gradient", D, M, rows, true, false}};
  if (argc > 1 && std::strcmp(argv[argc - 1], "--weight-grad-outputs") == 0) {
    const int64_t images = std::max<int64_t>(1, rows / 50);
    const Product outputs[] = {{"head weight gradient", 1000, D, images, true, false},
                               {"conv_proj weight gradient", D, 3 * 32 * 32, images * 49, true, false},
                               {"qkv weight gradient", 3 * D, D, rows, true, false},
                               {"proj weight gradient", D, D, rows, true, false},
                               {"fc1 weight gradient", M, D, rows, true, false},
                               {"fc2 weight gradient", D, M, rows, true, false}};
    for (const Product& p : outputs) time_weight_gradient_outputs(p, repeat);
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[argc - 1], "--backward-pairs") == 0) {
    time_backward_pairs(repeat);
    return 0;
  }
  for (const Product& p : weight_gradients) time_weight_gradient_layouts(p, repeat);
  if (argc > 1 && std::strcmp(argv[argc - 1], "--layouts-only") == 0) return 0;
  for (MatmulMode mode : {MatmulMode::tf32, MatmulMode::bf16})
    for (const Product& p : products) {
      if (mode == MatmulMode::bf16)
        time_product<__nv_bfloat16>(mode, p, repeat);
      else
        time_product<float>(mode, p, repeat);
    }
  return 0;
}
