// The numerics rule (see numerics_guard.hpp).
#include "train/numerics_guard.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace ddpx {
std::string tensor_at(const FlatLayout& layout, uint64_t offset) {
  for (const TensorSlot& slot : layout.tensors())
    if (offset >= slot.offset && offset < slot.offset + slot.numel)
      return fmt::format("'{}' (element {} of {})", slot.name, offset - slot.offset, slot.numel);
  return fmt::format("at flat offset {}", offset);
}

uint64_t first_nonfinite(std::span<const float> values) {
  constexpr size_t kChunk = 4096;
  for (size_t begin = 0; begin < values.size(); begin += kChunk) {
    const size_t end = std::min(values.size(), begin + kChunk);
    uint32_t any_bad = 0;
    for (size_t i = begin; i < end; ++i) {
      uint32_t bits;
      std::memcpy(&bits, &values[i], 4);
      any_bad |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);  // Inf and NaN: exponent all ones
    }
    if (any_bad == 0) continue;
    for (size_t i = begin; i < end; ++i)
      if (!std::isfinite(values[i])) return i;
  }
  return ~0ull;
}

void NumericsWatch::observe(int64_t step, float loss, std::span<const float> gradients) {
  if (problem_) return;
  NumericsProblem p;
  p.step = step;
  p.loss = loss;
  p.reference_loss = reference_loss_.value_or(0.f);
  if (!std::isfinite(loss)) {
    p.fault = NumericsFault::loss_not_finite;
    p.gradient_offset = first_nonfinite(gradients);
  } else if ((p.gradient_offset = first_nonfinite(gradients)) != ~0ull) {
    p.fault = NumericsFault::gradient_not_finite;
  } else if (reference_loss_ && divergence_ratio_ > 0 &&
             loss > static_cast<float>(divergence_ratio_) * std::max(*reference_loss_, 1.f)) {
    p.fault = NumericsFault::loss_diverged;
  }
  if (!reference_loss_ && std::isfinite(loss)) reference_loss_ = loss;
  if (p.fault != NumericsFault::none) problem_ = p;
}

std::string describe(const NumericsProblem& p, const FlatLayout& layout, double divergence_ratio, int rank) {
  const std::string gradient =
      p.gradient_offset == ~0ull ? "" : fmt::format("; the first non-finite gradient is in {}", tensor_at(layout, p.gradient_offset));
  const std::string remedy =
      "training diverged (try a lower --lr) or the input holds NaN or Inf values; the run stopped without "
      "writing a checkpoint or --save from this state (the last checkpoint, if any, is the last good one)";
  switch (p.fault) {
    case NumericsFault::loss_not_finite:
      return fmt::format("rank {}: the loss is {} at step {}{}: {}", rank, p.loss, p.step, gradient, remedy);
    case NumericsFault::gradient_not_finite:
      return fmt::format("rank {}: a gradient is not finite at step {} (loss {}){}: {}", rank, p.step, p.loss,
                         gradient, remedy);
    case NumericsFault::loss_diverged:
      return fmt::format("rank {}: the loss is {} at step {}, more than --divergence-ratio {:g} x max(first loss {}, "
                         "1): {} (if such spikes are expected, raise --divergence-ratio or set it to 0)",
                         rank, p.loss, p.step, divergence_ratio, p.reference_loss, remedy);
    case NumericsFault::none: break;
  }
  return "internal: no numerics problem";
}

}  // namespace ddpx
