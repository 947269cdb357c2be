// Optimizer state ownership and the spec -> fused update dispatch (see optimizer.hpp for the guarantees).
#include "optim/optimizer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "optim/adamw.hpp"
#include "optim/sgd.hpp"

namespace ddpx {

void optimizer_step_cpu(const OptimizerSpec& spec, float* params, const float* grads, std::span<float* const> state,
                        size_t n, int64_t step) {
  DDPX_INTERNAL_ASSERT(state.size() == spec.state_names().size(), "--optimizer {} has {} state buffers, given {}",
               spec.name(), spec.state_names().size(), state.size());
  switch (spec.kind) {
    case OptimizerKind::sgd:
      sgd_step_cpu(spec, params, grads, state.empty() ? nullptr : state[0], n, step);
      return;
    case OptimizerKind::adamw:
      adamw_step_cpu(spec, params, grads, state[0], state[1], n, step);
      return;
  }
}

Optimizer::Optimizer(const OptimizerSpec& spec, size_t num_elements)
    : spec_(spec), num_elements_(num_elements), state_names_(spec.state_names()) {
  spec_.validate();
  state_values_.assign(state_names_.size(), std::vector<float>(num_elements_, 0.f));
}

void Optimizer::step(float* params, const float* grads, size_t n) {
  DDPX_REQUIRE(n == num_elements_, "Optimizer::step: given {} elements but the {} state was sized for {}", n, name(),
               num_elements_);
  ++step_count_;
  std::vector<float*> state;
  for (std::vector<float>& values : state_values_) state.push_back(values.data());
  optimizer_step_cpu(spec_, params, grads, state, n, step_count_);
}

size_t Optimizer::state_index(std::string_view name) const {
  for (size_t i = 0; i < state_names_.size(); ++i)
    if (state_names_[i] == name) return i;
  fail("optimizer {} has no state buffer '{}' (its buffers: [{}])", this->name(), name, fmt::join(state_names_, ", "));
}

std::span<float> Optimizer::state(std::string_view name) { return state_values_[state_index(name)]; }

std::span<const float> Optimizer::state(std::string_view name) const { return state_values_[state_index(name)]; }

void Optimizer::set_step_count(int64_t step_count) {
  DDPX_REQUIRE(step_count >= 0, "optimizer step count must be >= 0, got {}", step_count);
  step_count_ = step_count;
}

}  // namespace ddpx
