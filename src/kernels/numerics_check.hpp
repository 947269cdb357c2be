// The per-step numerics check on the GPU, without a host synchronization: the optimizer kernels record the lowest
// offset of a non-finite gradient in NumericsFlag::step_bad_offset (SgdUpdate/AdamWUpdate::nonfinite_gradient,
// fused into their one pass over the gradients: no extra read of the buffer), and numerics_check_step(), one
// single-thread kernel enqueued after the optimizer, folds that and the step's loss into the flag and re-arms it.
// Guarantees: both are plain kernels on `stream` with fixed arguments, so a CUDA graph that captures a step checks
// every replay; the flag keeps the FIRST bad step (counted by the device, 1-based from the first check) and what
// was wrong, so reading it at any later synchronization point names the step where it began. Fault codes are
// train/numerics_guard.hpp's NumericsFault: 1 loss not finite, 2 gradient not finite, 3 loss diverged (above
// divergence_ratio x max(first loss, 1); ratio 0 disables that rule).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace ddpx {

struct NumericsFlag {
  unsigned long long step_bad_offset;   // lowest non-finite gradient offset this step; ~0ull: none
  unsigned long long steps_checked;     // numerics_check_step calls executed
  unsigned long long first_bad_check;   // steps_checked at the first bad step; 0: none yet
  unsigned long long first_bad_offset;  // its step_bad_offset (~0ull when the loss alone was bad)
  int fault;                            // NumericsFault of the first bad step
  float bad_loss;                       // the loss of the first bad step
  float reference_loss;                 // the first checked step's loss (finite), for the divergence rule
  int reference_set;
};

// Sets the flag to "nothing seen" (step_bad_offset = ~0ull, everything else 0). Not for capture.
void numerics_flag_reset(NumericsFlag* flag, cudaStream_t stream);

// Folds this step's loss (*loss, device) and step_bad_offset into the flag; then re-arms step_bad_offset.
void numerics_check_step(NumericsFlag* flag, const float* loss, float divergence_ratio, cudaStream_t stream);

}  // namespace ddpx
