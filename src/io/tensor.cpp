// Dtype helpers and HostTensor conversions (see tensor.hpp for the guarantees).
#include "io/tensor.hpp"

#include <fmt/ranges.h>

#include <cstring>

#include "core/half_precision.hpp"

namespace ddpx {

size_t dtype_size(TensorDType dtype) {
  switch (dtype) {
    case TensorDType::f32: return 4;
    case TensorDType::f64: return 8;
    case TensorDType::f16: return 2;
    case TensorDType::bf16: return 2;
    case TensorDType::i32: return 4;
    case TensorDType::i64: return 8;
    case TensorDType::u8: return 1;
  }
  fail("unknown TensorDType {}", static_cast<int>(dtype));
}

std::string_view dtype_name(TensorDType dtype) {
  switch (dtype) {
    case TensorDType::f32: return "f32";
    case TensorDType::f64: return "f64";
    case TensorDType::f16: return "f16";
    case TensorDType::bf16: return "bf16";
    case TensorDType::i32: return "i32";
    case TensorDType::i64: return "i64";
    case TensorDType::u8: return "u8";
  }
  fail("unknown TensorDType {}", static_cast<int>(dtype));
}

bool is_floating(TensorDType dtype) {
  return dtype == TensorDType::f32 || dtype == TensorDType::f64 || dtype == TensorDType::f16 ||
         dtype == TensorDType::bf16;
}

size_t shape_numel(std::span<const int64_t> shape) {
  size_t numel = 1;
  for (int64_t dim : shape) {
    DDPX_REQUIRE(dim >= 0, "tensor shape {} has a negative dimension", shape_string(shape));
    DDPX_REQUIRE(!__builtin_mul_overflow(numel, static_cast<size_t>(dim), &numel),
                 "tensor shape {} has more elements than fit in 64 bits", shape_string(shape));
  }
  return numel;
}

std::string shape_string(std::span<const int64_t> shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

namespace {

template <typename T>
void widen(const std::byte* source, size_t n, float* destination) {
  for (size_t i = 0; i < n; ++i) {
    T value;
    std::memcpy(&value, source + i * sizeof(T), sizeof(T));
    destination[i] = static_cast<float>(value);
  }
}

template <float (*decode)(uint16_t)>
void widen_16bit(const std::byte* source, size_t n, float* destination) {
  for (size_t i = 0; i < n; ++i) {
    uint16_t bits;
    std::memcpy(&bits, source + i * 2, 2);
    destination[i] = decode(bits);
  }
}

}  // namespace

void convert_to_float32(TensorDType dtype, const std::byte* source, size_t n, float* destination) {
  switch (dtype) {
    case TensorDType::f32: std::memcpy(destination, source, n * 4); return;
    case TensorDType::f64: widen<double>(source, n, destination); return;
    case TensorDType::f16: widen_16bit<half_to_float>(source, n, destination); return;
    case TensorDType::bf16: widen_16bit<bf16_to_float>(source, n, destination); return;
    case TensorDType::i32: widen<int32_t>(source, n, destination); return;
    case TensorDType::i64: widen<int64_t>(source, n, destination); return;
    case TensorDType::u8: widen<uint8_t>(source, n, destination); return;
  }
  fail("unknown TensorDType {}", static_cast<int>(dtype));
}

HostTensor HostTensor::zeros(TensorDType dtype, std::vector<int64_t> shape) {
  HostTensor t;
  t.dtype = dtype;
  t.data.assign(shape_numel(shape) * dtype_size(dtype), std::byte{0});
  t.shape = std::move(shape);
  return t;
}

std::vector<float> HostTensor::to_float32() const {
  std::vector<float> out(numel());
  convert_to_float32(dtype, data.data(), out.size(), out.data());
  return out;
}

std::vector<int64_t> HostTensor::to_int64() const {
  auto widen_all = [](auto typed) { return std::vector<int64_t>(typed.begin(), typed.end()); };
  switch (dtype) {
    case TensorDType::i32: return widen_all(values<int32_t>());
    case TensorDType::i64: return widen_all(values<int64_t>());
    case TensorDType::u8: return widen_all(values<uint8_t>());
    default:
      fail("cannot read a {} tensor {} as integers; expected i32, i64 or u8", dtype_name(dtype), shape_string(shape));
  }
}

void HostTensor::require_dtype(TensorDType expected) const {
  DDPX_REQUIRE(dtype == expected, "tensor {} holds {} values, not {}", shape_string(shape), dtype_name(dtype),
               dtype_name(expected));
}

}  // namespace ddpx
