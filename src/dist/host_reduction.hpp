// Host reductions shared by the CPU backends: element-wise sum/max of every CommDType (16-bit formats widened to
// float, added or compared, and rounded back to nearest even, the way NCCL reduces them), and the division by the
// world size that turns a sum into ReduceOp::avg. Pure functions, any thread.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/half_precision.hpp"
#include "dist/communicator.hpp"

namespace ddpx {

namespace host_reduction_detail {

template <typename T>
void divide_in_place(void* buf, size_t count, int divisor) {
  auto* values = static_cast<T*>(buf);
  for (size_t i = 0; i < count; ++i) values[i] = static_cast<T>(values[i] / static_cast<T>(divisor));
}

template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void divide_16bit_in_place(void* buf, size_t count, int divisor) {
  auto* values = static_cast<uint16_t*>(buf);
  float scale = 1.0f / static_cast<float>(divisor);
  for (size_t i = 0; i < count; ++i) values[i] = Narrow(Widen(values[i]) * scale);
}

template <typename T>
void combine(void* out, const void* a, const void* b, size_t count, bool is_max) {
  auto* c = static_cast<T*>(out);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  for (size_t i = 0; i < count; ++i) c[i] = is_max ? std::max(x[i], y[i]) : static_cast<T>(x[i] + y[i]);
}

template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void combine_16bit(void* out, const void* a, const void* b, size_t count, bool is_max) {
  auto* c = static_cast<uint16_t*>(out);
  const auto* x = static_cast<const uint16_t*>(a);
  const auto* y = static_cast<const uint16_t*>(b);
  for (size_t i = 0; i < count; ++i) {
    float p = Widen(x[i]), q = Widen(y[i]);
    c[i] = Narrow(is_max ? std::max(p, q) : p + q);
  }
}

}  // namespace host_reduction_detail

// out[i] = a[i] (+ or max) b[i]; out may alias a or b. avg combines like sum.
inline void combine_elements(void* out, const void* a, const void* b, size_t count, CommDType dtype, ReduceOp op) {
  using namespace host_reduction_detail;
  const bool is_max = op == ReduceOp::max;
  switch (dtype) {
    case CommDType::f32: return combine<float>(out, a, b, count, is_max);
    case CommDType::f64: return combine<double>(out, a, b, count, is_max);
    case CommDType::i32: return combine<int32_t>(out, a, b, count, is_max);
    case CommDType::i64: return combine<int64_t>(out, a, b, count, is_max);
    case CommDType::u8: return combine<uint8_t>(out, a, b, count, is_max);
    case CommDType::f16: return combine_16bit<half_to_float, float_to_half>(out, a, b, count, is_max);
    case CommDType::bf16: return combine_16bit<bf16_to_float, float_to_bf16>(out, a, b, count, is_max);
  }
}

// buf[i] /= world in the dtype (16-bit: times 1/world in float, rounded back).
inline void divide_by_world(void* buf, size_t count, CommDType dtype, int world) {
  using namespace host_reduction_detail;
  switch (dtype) {
    case CommDType::f32: return divide_in_place<float>(buf, count, world);
    case CommDType::f64: return divide_in_place<double>(buf, count, world);
    case CommDType::i32: return divide_in_place<int32_t>(buf, count, world);
    case CommDType::i64: return divide_in_place<int64_t>(buf, count, world);
    case CommDType::u8: return divide_in_place<uint8_t>(buf, count, world);
    case CommDType::f16: return divide_16bit_in_place<half_to_float, float_to_half>(buf, count, world);
    case CommDType::bf16: return divide_16bit_in_place<bf16_to_float, float_to_bf16>(buf, count, world);
  }
}

}  // namespace ddpx
