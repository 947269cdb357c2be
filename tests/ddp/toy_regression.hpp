// ToyRegression: a multi-output linear regression living in a flat parameter/gradient buffer, the smallest
// model the reducer can be checked on. Groups g = 0..4 map x (12 inputs) to y_g = W_g x + b_g; the buffer holds
// them in "backward order" (group 4 first), every tensor aligned to 8 elements (padding gaps stay zero), and
// group 1's weight has a 3-D shape [O, 3, 4] (PowerSGD views it as [O, 12]).
// Samples are a pure function of (step, sample index), so any rank can compute any shard of a global batch.
// accumulate_gradients() ADDS scale * d(mean loss over its samples) and reports each group's span
// [weight, bias end) through `ready` in buffer order, the way a backward pass would.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "comm_plan/bucket_plan.hpp"
#include "core/rng.hpp"

namespace ddpx::testing {

class ToyRegression {
 public:
  static constexpr int64_t kInputs = 12;

  ToyRegression() {
    const std::vector<int64_t> outputs{16, 24, 8, 20, 4};
    groups_.resize(outputs.size());
    size_t offset = 0;
    auto align = [](size_t n) { return (n + 7) / 8 * 8; };
    for (int g = static_cast<int>(outputs.size()) - 1; g >= 0; --g) {
      Group& group = groups_[g];
      group.outputs = outputs[g];
      std::vector<int64_t> weight_shape =
          g == 1 ? std::vector<int64_t>{outputs[g], 3, 4} : std::vector<int64_t>{outputs[g], kInputs};
      group.weight = offset;
      tensors_.push_back({"group" + std::to_string(g) + ".weight", offset, size_t(outputs[g] * kInputs),
                          weight_shape});
      offset = align(offset + outputs[g] * kInputs + 3);  // +3: a visible padding gap
      group.bias = offset;
      tensors_.push_back({"group" + std::to_string(g) + ".bias", offset, size_t(outputs[g]), {outputs[g]}});
      offset = align(offset + outputs[g]);
      total_outputs_ += outputs[g];
    }
    buffer_elems_ = offset;
    Rng rng(99);
    true_params_.assign(buffer_elems_, 0.0f);
    for (const GradTensor& t : tensors_)
      for (size_t i = 0; i < t.numel; ++i) true_params_[t.offset + i] = float(rng.normal());
  }

  const std::vector<GradTensor>& tensors() const { return tensors_; }
  size_t buffer_elems() const { return buffer_elems_; }

  // Parameters drawn from `seed`, padding zero.
  std::vector<float> initial_params(uint64_t seed) const {
    Rng rng(seed);
    std::vector<float> params(buffer_elems_, 0.0f);
    for (const GradTensor& t : tensors_)
      for (size_t i = 0; i < t.numel; ++i) params[t.offset + i] = float(0.3 * rng.normal());
    return params;
  }

  double accumulate_gradients(const std::vector<float>& params, float* grads, int64_t step, int64_t first,
                              int64_t count, double scale,
                              const std::function<void(size_t, size_t)>& ready = {}) const {
    std::vector<std::vector<double>> inputs(count), residuals(count);
    double loss = 0;
    for (int64_t s = 0; s < count; ++s) {
      Rng rng(0x1234567ULL * uint64_t(step + 1) + uint64_t(first + s));
      std::vector<double>& x = inputs[s];
      for (int64_t i = 0; i < kInputs; ++i) x.push_back(rng.normal());
      for (const Group& group : groups_)
        for (int64_t o = 0; o < group.outputs; ++o) {
          double prediction = params[group.bias + o], target = true_params_[group.bias + o] + 0.1 * rng.normal();
          for (int64_t i = 0; i < kInputs; ++i) {
            prediction += params[group.weight + o * kInputs + i] * x[i];
            target += true_params_[group.weight + o * kInputs + i] * x[i];
          }
          residuals[s].push_back(prediction - target);
          loss += 0.5 * (prediction - target) * (prediction - target) / double(count);
        }
    }
    // "Backward": groups in buffer order (last group first), each reported once its gradient is final.
    for (int g = static_cast<int>(groups_.size()) - 1; g >= 0; --g) {
      const Group& group = groups_[g];
      size_t residual_base = 0;
      for (int h = 0; h < g; ++h) residual_base += groups_[h].outputs;
      for (int64_t o = 0; o < group.outputs; ++o) {
        double bias_grad = 0;
        std::vector<double> weight_grad(kInputs, 0.0);
        for (int64_t s = 0; s < count; ++s) {
          const double r = residuals[s][residual_base + o];
          bias_grad += r;
          for (int64_t i = 0; i < kInputs; ++i) weight_grad[i] += r * inputs[s][i];
        }
        grads[group.bias + o] += float(scale * bias_grad / double(count));
        for (int64_t i = 0; i < kInputs; ++i)
          grads[group.weight + o * kInputs + i] += float(scale * weight_grad[i] / double(count));
      }
      if (ready) ready(group.weight, group.bias + group.outputs);
    }
    return loss;
  }

 private:
  struct Group {
    int64_t outputs = 0;
    size_t weight = 0, bias = 0;
  };
  std::vector<Group> groups_;
  std::vector<GradTensor> tensors_;
  size_t buffer_elems_ = 0;
  int64_t total_outputs_ = 0;
  std::vector<float> true_params_;
};

inline void sgd_step(std::vector<float>& params, const std::vector<float>& grads, float lr) {
  for (size_t i = 0; i < params.size(); ++i) params[i] -= lr * grads[i];
}

}  // namespace ddpx::testing
