// attention_timing: microseconds per call of the attention kernels (src/kernels/attention.hpp) at the ViT shapes
// that matter: bf16 (tensor cores), fp32 (CUDA cores: the fp32 precision's path) and fp32 with TF32 allowed (the
// tf32 precision's path); a measurement tool, not a test. For each shape: fresh random qkv and d_out on the GPU, 5
// warm-up pairs, then --repeat forward and backward calls each timed with CUDA events; prints the median, the
// achieved TFLOP/s (forward 2 matmuls, backward 5 over the sequence squared x head_dim) and the per-image bias
// sums' share. Usage: attention_timing [--repeat 50] [--shape vit_b_16] (--shape: that bf16 shape only, e.g. for ncu)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/cuda_check.hpp"
#include "cuda_timing.hpp"
#include "kernels/attention.hpp"
#include "model_cuda/device_buffer.hpp"

namespace {

using namespace ddpx;
using bf16 = __nv_bfloat16;

struct NamedShape {
  const char* name;
  AttentionShape shape;
};

using bench::fill_uniform;
using bench::median_us;

template <typename T>
void time_shape(const NamedShape& named, int repeat, bool tf32 = false) {
  AttentionShape s = named.shape;
  s.tf32 = tf32;
  const int64_t D = s.heads * s.head_dim, rows = s.batch * s.seq;
  DeviceBuffer<T> qkv(rows * 3 * D, "qkv"), out(rows * D, "out"), d_out(rows * D, "d_out"),
      d_qkv(rows * 3 * D, "d_qkv");
  DeviceBuffer<float> lse(s.batch * s.heads * s.seq, "lse"), d_bias(s.batch * 3 * D, "d_bias");
  const size_t scratch_bytes = attention_backward_scratch_bytes<T>(s);
  DeviceBuffer<uint4> scratch(std::max<size_t>(1, scratch_bytes / sizeof(uint4)), "attention scratch");
  fill_uniform(qkv.get(), rows * 3 * D, 1);
  fill_uniform(d_out.get(), rows * D, 2);
  auto forward = [&] { attention_forward<T>(s, qkv.get(), out.get(), lse.get(), nullptr); };
  auto backward = [&](float* bias) {
    attention_backward<T>(s, qkv.get(), out.get(), lse.get(), d_out.get(), d_qkv.get(), bias, scratch.get(),
                          scratch_bytes, nullptr);
  };
  for (int i = 0; i < 5; ++i) forward(), backward(d_bias.get());
  DDPX_CUDA_CHECK(cudaDeviceSynchronize());
  const double fwd = median_us(repeat, forward);
  const double bwd = median_us(repeat, [&] { backward(d_bias.get()); });
  const double bwd_plain = median_us(repeat, [&] { backward(nullptr); });
  const double pairs = static_cast<double>(s.batch * s.heads), square = static_cast<double>(s.seq * s.seq);
  const double fwd_flop = pairs * 2 * 2 * square * s.head_dim, bwd_flop = pairs * 5 * 2 * square * s.head_dim;
  std::printf("%s %s b%lld s%lld h%lld d%lld: forward %.1f us %.0f TFLOP/s | backward %.1f us %.0f TFLOP/s | "
              "no bias sums %.1f us\n",
              named.name, tf32 ? "tf32" : std::is_same_v<T, float> ? "fp32" : "bf16", static_cast<long long>(s.batch), static_cast<long long>(s.seq),
              static_cast<long long>(s.heads), static_cast<long long>(s.head_dim), fwd, fwd_flop / fwd * 1e-6, bwd,
              bwd_flop / bwd * 1e-6, bwd_plain);
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 50;
  const char* only = nullptr;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--repeat") == 0) repeat = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--shape") == 0) only = argv[i + 1];
  }
  auto shape = [](int64_t batch, int64_t seq, int64_t heads, int64_t head_dim) {
    AttentionShape s;
    s.batch = batch, s.seq = seq, s.heads = heads, s.head_dim = head_dim;
    s.scale = 1.f / std::sqrt(static_cast<float>(head_dim));
    return s;
  };
  const NamedShape shapes[] = {{"vit_l_32", shape(32, 50, 16, 64)},
                               {"vit_b_16", shape(256, 197, 12, 64)},
                               {"vit_h_14", shape(32, 257, 16, 80)}};
  if (only != nullptr) {
    for (const auto& named : shapes)
      if (std::strcmp(named.name, only) == 0) return time_shape<bf16>(named, repeat), 0;
    std::fprintf(stderr, "attention_timing: --shape %s is not one of vit_l_32, vit_b_16, vit_h_14\n", only);
    return 2;
  }
  for (const auto& named : shapes) time_shape<bf16>(named, repeat);
  time_shape<float>(shapes[0], repeat);
  time_shape<float>(shapes[0], repeat, true);
  return 0;
}
