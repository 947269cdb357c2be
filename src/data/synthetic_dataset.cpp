// Counter-based synthetic data; see synthetic_dataset.hpp.
#include "data/synthetic_dataset.hpp"

#include <fmt/format.h>

#include <cmath>

namespace ddpx {
namespace {

inline uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

inline uint64_t batch_key(uint64_t seed, int64_t step, int rank, uint64_t stream) {
  return mix64(mix64(mix64(seed ^ stream) + static_cast<uint64_t>(step)) + static_cast<uint64_t>(rank));
}

}  // namespace

void fill_hashed_normal(uint64_t key, float* out, int64_t n) {
  // Box-Muller on pairs: one 64-bit hash gives two 24-bit uniforms.
  constexpr float kInv24 = 1.0f / 16777216.0f;
  constexpr float kTwoPi = 6.28318530717958647f;
  for (int64_t i = 0; i < n; i += 2) {
    uint64_t h = mix64(key + static_cast<uint64_t>(i));
    float u1 = (static_cast<float>(h >> 40) + 0.5f) * kInv24;
    float u2 = static_cast<float>((h >> 16) & 0xFFFFFF) * kInv24;
    float r = std::sqrt(-2.0f * std::log(u1));
    float angle = kTwoPi * u2;
    out[i] = r * std::cos(angle);
    if (i + 1 < n) out[i + 1] = r * std::sin(angle);
  }
}

SyntheticDataset::SyntheticDataset(const DataShape& shape, uint64_t seed, bool learnable)
    : shape_(shape), seed_(seed), learnable_(learnable) {
  if (learnable_) {
    prototypes_.resize(static_cast<size_t>(shape_.num_classes * shape_.image_numel()));
    fill_hashed_normal(mix64(seed_ ^ 0x70726f746fULL), prototypes_.data(), static_cast<int64_t>(prototypes_.size()));
  }
}

std::string SyntheticDataset::describe() const {
  return fmt::format("{} ({}x{}x{} images, {} classes, seed {})", learnable_ ? "learnable synthetic" : "synthetic",
                     shape_.channels, shape_.image_size, shape_.image_size, shape_.num_classes, seed_);
}

void SyntheticDataset::fill_batch(int64_t step, int rank, int /*world*/, int64_t batch, float* images,
                                  int32_t* labels) const {
  const int64_t numel = shape_.image_numel();
  const uint64_t label_key = batch_key(seed_, step, rank, 0x6c6162656cULL);
  for (int64_t b = 0; b < batch; ++b)
    labels[b] = static_cast<int32_t>(mix64(label_key + static_cast<uint64_t>(b)) %
                                     static_cast<uint64_t>(shape_.num_classes));
  for (int64_t b = 0; b < batch; ++b) {
    float* image = images + b * numel;
    fill_hashed_normal(batch_key(seed_, step, rank, 0x696d616765ULL) + static_cast<uint64_t>(b) * 0x100000000ULL,
                       image, numel);
    if (learnable_) {
      const float* proto = prototypes_.data() + labels[b] * numel;
      for (int64_t i = 0; i < numel; ++i) image[i] = 0.5f * image[i] + proto[i];
    }
  }
}

}  // namespace ddpx
