// Optimizer: the host state of one optimizer spec (optim/optimizer_spec.hpp), for checkpoints and tests, and the
// one dispatch from a spec to its fused CPU update.
// Guarantees: the spec is validated at construction; state buffers hold num_elements() floats each, start at
// zero, and are named as the spec names them (torch's optimizer state; "momentum_buffer" is called "momentum");
// step() advances step_count() by one before updating, so the first update is step 1 as in torch.
// Not thread-safe; one Optimizer per flat parameter buffer.
#pragma once
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "optim/optimizer_spec.hpp"

namespace ddpx {

// The spec's update of n elements at step `step` on the calling thread: sgd_step_cpu or adamw_step_cpu.
// state[i] points at the i-th buffer of spec.state_names() (offset like params), none when it names none.
void optimizer_step_cpu(const OptimizerSpec& spec, float* params, const float* grads, std::span<float* const> state,
                        size_t n, int64_t step);

class Optimizer {
 public:
  Optimizer(const OptimizerSpec& spec, size_t num_elements);  // validates the spec
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  const OptimizerSpec& spec() const { return spec_; }
  std::string_view name() const { return spec_.name(); }  // "sgd" or "adamw"
  // Every hyperparameter by its field name, e.g. {"lr": 0.01, "momentum": 0.9, ...}, floats as typed decimals.
  nlohmann::json options_json() const { return spec_.hyperparameters_json(); }

  size_t num_elements() const { return num_elements_; }
  int64_t step_count() const { return step_count_; }
  // One update; n must equal num_elements().
  void step(float* params, const float* grads, size_t n);

  const std::vector<std::string>& state_names() const { return state_names_; }
  std::span<float> state(std::string_view name);  // throws naming the buffer and the valid names
  std::span<const float> state(std::string_view name) const;
  // For checkpoint restore: the next step() is step step_count + 1. The state buffers are filled by the caller.
  void set_step_count(int64_t step_count);

 private:
  size_t state_index(std::string_view name) const;

  OptimizerSpec spec_;
  size_t num_elements_ = 0;
  int64_t step_count_ = 0;
  std::vector<std::string> state_names_;
  std::vector<std::vector<float>> state_values_;
};

}  // namespace ddpx
