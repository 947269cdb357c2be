// The numerics rule every step of training obeys, on both engines: a step is bad when its loss is not finite,
// when any gradient the optimizer is about to apply (after the all-reduce) is Inf or NaN, or when its loss is
// finite but above divergence_ratio x max(first loss of this run, 1) (`--divergence-ratio`, default 1e4; 0 turns
// that rule off). Cross-entropy starts near ln(classes) (2.3 for 10 classes, 6.9 for 1000) and spikes of 10-100x
// happen in runs that recover; 1e4x (a loss of 2.3e4 from 2.3) is far outside anything that trains, and AdamW at
// lr 1e6 crosses it on its second step (loss 7e13), long before the weights turn NaN.
// Where: the CPU engine checks in optimizer_step (one vectorized pass over the gradients, far cheaper than the
// backward that wrote them); the CUDA engine fuses the gradient check into its optimizer kernel and folds the
// loss in with one single-thread kernel (kernels/numerics_check.hpp), read only where the host synchronizes.
// Guarantee: the first bad step is kept, so a problem read later still names the step where it began, and
// describe() names the step, the rank, the tensor holding the first non-finite gradient and what to do.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "model/flat_layout.hpp"

namespace ddpx {

enum class NumericsFault : int { none = 0, loss_not_finite = 1, gradient_not_finite = 2, loss_diverged = 3 };

struct NumericsProblem {
  NumericsFault fault = NumericsFault::none;
  int64_t step = 0;               // trainer step (1-based)
  float loss = 0;                 // that step's loss
  float reference_loss = 0;       // the run's first loss (divergence)
  uint64_t gradient_offset = ~0ull;  // first non-finite gradient in the flat buffer (~0: none found)
};

// The message of the ddpx::Error that stops the run.
std::string describe(const NumericsProblem& problem, const FlatLayout& layout, double divergence_ratio, int rank);

// The host side of the rule (CPU engine): observe() every step; first_problem() keeps the first bad one.
class NumericsWatch {
 public:
  explicit NumericsWatch(double divergence_ratio) : divergence_ratio_(divergence_ratio) {}
  void observe(int64_t step, float loss, std::span<const float> gradients);
  const std::optional<NumericsProblem>& first_problem() const { return problem_; }

 private:
  double divergence_ratio_;
  std::optional<float> reference_loss_;
  std::optional<NumericsProblem> problem_;
};

// The tensor holding a flat-buffer offset: "'encoder.ln.weight' (element 3 of 32)".
std::string tensor_at(const FlatLayout& layout, uint64_t offset);

// Offset of the first Inf/NaN in values, or ~0 when all are finite (one vectorizable pass).
uint64_t first_nonfinite(std::span<const float> values);

}  // namespace ddpx
