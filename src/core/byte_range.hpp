// Byte ranges read from files: an (offset, size) pair taken from a file's header or index is inside a limit only
// if `offset <= limit && size <= limit - offset`. Never `offset + size <= limit`: a crafted offset near 2^64 wraps
// that sum to a small number and passes (issue 48: a pack entry at 2^64 - 8 of 24 bytes crashed in crc32).
// Guarantees: range_fits() and range_between() never overflow, for every u64 input; checked_mul() and
// checked_add() report a wrapped product or sum instead of returning it. Every reader of src/data, src/io and the
// report's folders checks offsets and sizes it reads from a file through these (docs/design.md, "What holds for
// data files").
#pragma once
#include <cstdint>
#include <optional>

namespace ddpx {

// [offset, offset + size) lies inside [0, limit).
constexpr bool range_fits(uint64_t offset, uint64_t size, uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

// [offset, offset + size) lies inside [begin, end).
constexpr bool range_between(uint64_t offset, uint64_t size, uint64_t begin, uint64_t end) {
  return begin <= offset && range_fits(offset, size, end);
}

// a x b and a + b, or nullopt when the result does not fit in 64 bits.
constexpr std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
  uint64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}
constexpr std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
  uint64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return std::nullopt;
  return sum;
}

}  // namespace ddpx
