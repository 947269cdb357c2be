// Optimizer construction from flags, state ownership and dispatch (see optimizer.hpp for the guarantees).
#include "optim/optimizer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "optim/hyperparameter.hpp"

namespace ddpx {

namespace {

template <typename T>
void reject_flag(const std::optional<T>& value, std::string_view flag, std::string_view optimizer,
                 std::string_view its_flags) {
  DDPX_REQUIRE(!value.has_value(), "{} does not apply to --optimizer {} (its flags: {})", flag, optimizer, its_flags);
}

}  // namespace

std::vector<std::string> Optimizer::names() { return {"sgd", "adamw"}; }

std::unique_ptr<Optimizer> Optimizer::make(std::string_view name, const OptimizerFlags& flags, size_t num_elements) {
  if (name == "sgd") {
    constexpr std::string_view its_flags = "--lr, --momentum, --dampening, --weight-decay, --nesterov";
    reject_flag(flags.beta1, "--beta1", name, its_flags);
    reject_flag(flags.beta2, "--beta2", name, its_flags);
    reject_flag(flags.eps, "--eps", name, its_flags);
    SgdOptions options;
    options.lr = flags.lr.value_or(options.lr);
    options.momentum = flags.momentum.value_or(options.momentum);
    options.dampening = flags.dampening.value_or(options.dampening);
    options.weight_decay = flags.weight_decay.value_or(options.weight_decay);
    options.nesterov = flags.nesterov.value_or(options.nesterov);
    return std::make_unique<Optimizer>(options, num_elements);
  }
  if (name == "adamw") {
    constexpr std::string_view its_flags = "--lr, --beta1, --beta2, --eps, --weight-decay";
    reject_flag(flags.momentum, "--momentum", name, its_flags);
    reject_flag(flags.dampening, "--dampening", name, its_flags);
    reject_flag(flags.nesterov, "--nesterov", name, its_flags);
    AdamWOptions options;
    options.lr = flags.lr.value_or(options.lr);
    options.beta1 = flags.beta1.value_or(options.beta1);
    options.beta2 = flags.beta2.value_or(options.beta2);
    options.eps = flags.eps.value_or(options.eps);
    options.weight_decay = flags.weight_decay.value_or(options.weight_decay);
    return std::make_unique<Optimizer>(options, num_elements);
  }
  fail("unknown --optimizer '{}'; choose one of: {}", name, fmt::join(names(), ", "));
}

Optimizer::Optimizer(const Options& options, size_t num_elements) : options_(options), num_elements_(num_elements) {
  std::visit([](const auto& typed) { validate(typed); }, options_);
  if (const auto* sgd = std::get_if<SgdOptions>(&options_)) {
    if (sgd->momentum != 0.f) state_names_ = {"momentum"};
  } else {
    state_names_ = {"exp_avg", "exp_avg_sq"};
  }
  state_values_.assign(state_names_.size(), std::vector<float>(num_elements_, 0.f));
}

std::string_view Optimizer::name() const { return std::holds_alternative<SgdOptions>(options_) ? "sgd" : "adamw"; }

nlohmann::json Optimizer::options_json() const {
  if (const auto* sgd = std::get_if<SgdOptions>(&options_))
    return {{"lr", typed_decimal(sgd->lr)},
            {"momentum", typed_decimal(sgd->momentum)},
            {"dampening", typed_decimal(sgd->dampening)},
            {"weight_decay", typed_decimal(sgd->weight_decay)},
            {"nesterov", sgd->nesterov}};
  const auto& adamw = std::get<AdamWOptions>(options_);
  return {{"lr", typed_decimal(adamw.lr)},
          {"beta1", typed_decimal(adamw.beta1)},
          {"beta2", typed_decimal(adamw.beta2)},
          {"eps", typed_decimal(adamw.eps)},
          {"weight_decay", typed_decimal(adamw.weight_decay)}};
}

float Optimizer::lr() const {
  return std::visit([](const auto& typed) { return typed.lr; }, options_);
}

void Optimizer::set_lr(float lr) {
  Options changed = options_;
  std::visit([lr](auto& typed) { typed.lr = lr; }, changed);
  std::visit([](const auto& typed) { validate(typed); }, changed);
  options_ = changed;
}

void Optimizer::step(float* params, const float* grads, size_t n) {
  DDPX_REQUIRE(n == num_elements_, "Optimizer::step: given {} elements but the {} state was sized for {}", n, name(),
               num_elements_);
  ++step_count_;
  if (const auto* sgd = std::get_if<SgdOptions>(&options_)) {
    float* momentum = state_values_.empty() ? nullptr : state_values_[0].data();
    sgd_step_cpu(*sgd, params, grads, momentum, n, step_count_);
  } else {
    adamw_step_cpu(std::get<AdamWOptions>(options_), params, grads, state_values_[0].data(),
                   state_values_[1].data(), n, step_count_);
  }
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
