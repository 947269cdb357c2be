// AttentionShape: the shape of one fused attention call (kernels/attention.hpp), in its own header so that the
// fast paths behind attention.hpp (attention_tf32.hpp, attention_tensor_core.hpp) take it without including the
// dispatcher that includes them. Plain data.
#pragma once
#include <cstdint>

namespace ddpx {

struct AttentionShape {
  int64_t batch = 0, seq = 0, heads = 0, head_dim = 0;
  float scale = 1.f;  // usually 1/sqrt(head_dim)
  // fp32 storage only: the two products per pass may run on TF32 tensor cores (attention_tf32.hpp), the tf32
  // precision's choice for every matmul; false keeps fp32 CUDA-core math (the fp32 precision).
  bool tf32 = false;
};

}  // namespace ddpx
