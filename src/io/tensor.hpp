// HostTensor: a dense, C-ordered tensor in host memory, the unit that tensor files (.safetensors, .npy) read and
// write. Guarantees: data.size() == numel(shape) * dtype_size(dtype) for every tensor built by make() or read by
// io; bytes are little-endian (the only byte order ddpx supports); typed views check the dtype and throw
// ddpx::Error naming both dtypes instead of reinterpreting silently. Plain value type, no sharing.
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace ddpx {

static_assert(std::endian::native == std::endian::little, "ddpx tensor files assume a little-endian host");

// Element types of tensor files. Named TensorDType so that a communication dtype can be called DType.
enum class TensorDType { f32, f64, f16, bf16, i32, i64, u8 };

size_t dtype_size(TensorDType dtype);
std::string_view dtype_name(TensorDType dtype);  // "f32", "f64", "f16", "bf16", "i32", "i64", "u8"
bool is_floating(TensorDType dtype);             // f32, f64, f16, bf16

template <typename T> constexpr TensorDType dtype_of();
template <> constexpr TensorDType dtype_of<float>() { return TensorDType::f32; }
template <> constexpr TensorDType dtype_of<double>() { return TensorDType::f64; }
template <> constexpr TensorDType dtype_of<int32_t>() { return TensorDType::i32; }
template <> constexpr TensorDType dtype_of<int64_t>() { return TensorDType::i64; }
template <> constexpr TensorDType dtype_of<uint8_t>() { return TensorDType::u8; }

// Product of the dimensions (1 for a scalar shape []); throws ddpx::Error on a negative dimension or overflow.
size_t shape_numel(std::span<const int64_t> shape);
// "[2, 3]" for messages.
std::string shape_string(std::span<const int64_t> shape);

// Converts n elements of any floating or integer dtype to float (fp16/bf16 exactly, f64/i64 rounded).
void convert_to_float32(TensorDType dtype, const std::byte* source, size_t n, float* destination);

struct HostTensor {
  TensorDType dtype = TensorDType::f32;
  std::vector<int64_t> shape;
  std::vector<std::byte> data;

  // Zero-filled tensor of the given dtype and shape.
  static HostTensor zeros(TensorDType dtype, std::vector<int64_t> shape);
  // Copies values (numel(shape) of them) into a new tensor of T's dtype.
  template <typename T>
  static HostTensor from_values(std::vector<int64_t> shape, std::span<const T> values) {
    HostTensor t = zeros(dtype_of<T>(), std::move(shape));
    DDPX_REQUIRE(values.size() == t.numel(), "HostTensor::from_values: shape {} holds {} values but {} were given",
                 shape_string(t.shape), t.numel(), values.size());
    std::memcpy(t.data.data(), values.data(), t.data.size());
    return t;
  }

  size_t numel() const { return shape_numel(shape); }
  size_t nbytes() const { return data.size(); }

  // Typed views; the tensor's dtype must be T's (no conversion). Throws naming both dtypes otherwise.
  template <typename T>
  std::span<T> values() {
    require_dtype(dtype_of<T>());
    return {reinterpret_cast<T*>(data.data()), data.size() / sizeof(T)};
  }
  template <typename T>
  std::span<const T> values() const {
    require_dtype(dtype_of<T>());
    return {reinterpret_cast<const T*>(data.data()), data.size() / sizeof(T)};
  }

  // Converting copies: to_float32 accepts every dtype; to_int64 accepts the integer dtypes only.
  std::vector<float> to_float32() const;
  std::vector<int64_t> to_int64() const;

 private:
  void require_dtype(TensorDType expected) const;
};

}  // namespace ddpx
