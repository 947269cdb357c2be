// The training recipe's device forms (optim/lr_schedule, optim/grad_clip, optim/weight_average,
// data/batch_mixing and model/cross_entropy's soft targets are their CPU twins; tests/kernels/test_recipe.cpp
// compares each with its twin on fresh random data, GPU-labelled). Not yet called by a default run: the CUDA engine
// uses them only when a run asks for the feature (see docs/cli.md), and they stay opt-in until verified on a GPU.
// Guarantees: every launch enqueues on `stream` and never synchronizes the host; the scalars that change per step
// (the rate, the clip coefficient) live in device memory, so a captured step graph replays them changing.
//
// Note [The learning rate on the device]
// A CUDA graph freezes kernel arguments, so a rate passed as an argument would replay the captured step's rate
// forever (why OptimizerSpec::graph_replay_exact() refuses varying rates). advance_learning_rate() instead keeps the
// optimizer step in device memory: each launch increments it and writes that step's rate (core/lr_formula.hpp's
// closed form, the function the host's LrSchedule::rate_at calls, evaluated in double) to a device float; the fused SGD update reads it from there when
// SgdUpdate::lr_on_device is set. One node per step in the graph, no capture per step.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "core/lr_formula.hpp"

namespace ddpx {

// ++*step, then *lr = lr_formula_at(schedule, *step) (fp32): LrSchedule::formula() gives the argument. One thread.
void advance_learning_rate(const LrFormula& schedule, long long* step, float* lr, cudaStream_t stream);

// Global L2 norm of grads[0, n) into *norm (fp32, summed in double over fixed block partials, so deterministic),
// and *coefficient = min(1, max_norm / (norm + 1e-6)) (optim/grad_clip.hpp); then grads *= *coefficient.
// partials: caller scratch of clip_partials_count() doubles.
int clip_partials_count();
void clip_grad_norm(float* grads, int64_t n, float max_norm, double* partials, float* norm, float* coefficient,
                    cudaStream_t stream);

// values = first ? params : keep * values + blend * params (optim/weight_average.hpp), fp32.
void weight_average_update(float* values, const float* params, int64_t n, float keep, float blend, bool first,
                           cudaStream_t stream);

// Soft-target softmax cross-entropy (model/cross_entropy.hpp ClassTargets): like softmax_xent.hpp's, with label
// smoothing and an optional partner label per row (mixed_labels nullptr: none). T: float or __nv_bfloat16.
template <typename T>
void softmax_cross_entropy_soft(const float* logits, const int32_t* labels, const int32_t* mixed_labels, float mix,
                                float label_smoothing, int64_t batch, int64_t classes, float grad_scale, float* loss,
                                T* dlogits, float* row_loss, cudaStream_t stream);

// data/batch_mixing.hpp's apply_mix, out of place (out must not alias in): kind 1 mixup, 2 cutmix; the box as there.
struct DeviceMixDraw {
  int kind = 0;
  float own = 1, other = 0;  // fp32(lambda), fp32(1 - lambda)
  long long x1 = 0, y1 = 0, x2 = 0, y2 = 0;
};
void apply_mix(const float* in, float* out, const int32_t* labels, int32_t* mixed_labels, int64_t batch,
               int64_t channels, int64_t height, int64_t width, const DeviceMixDraw& draw, cudaStream_t stream);

}  // namespace ddpx
