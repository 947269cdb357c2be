// FNV-1a, 64 bits: the one non-cryptographic hash ddpx uses to name things stably (per-tensor random streams,
// heartbeat folders, the start-up agreement's digest, input-file fingerprints). Guarantee: the same bytes give
// the same value on every platform and build; passing a previous result as `hash` continues the same hash over
// concatenated input.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ddpx {

constexpr uint64_t kFnv1aOffset = 0xcbf29ce484222325ULL;

inline uint64_t fnv1a(const unsigned char* data, size_t n, uint64_t hash = kFnv1aOffset) {
  for (size_t i = 0; i < n; ++i) hash = (hash ^ data[i]) * 0x100000001b3ULL;
  return hash;
}

inline uint64_t fnv1a(std::string_view text, uint64_t hash = kFnv1aOffset) {
  return fnv1a(reinterpret_cast<const unsigned char*>(text.data()), text.size(), hash);
}

}  // namespace ddpx
