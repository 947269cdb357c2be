// Optimizer: one of the fused CPU optimizers plus the host state it owns, for trainers and checkpoints.
// Guarantees: options are validated at construction and by set_lr(); state buffers hold num_elements() floats
// each, start at zero, and are named as in torch's optimizer state ("momentum_buffer" is called "momentum");
// step() advances step_count() by one before updating, so the first update is step 1 as in torch.
// Not thread-safe; one Optimizer per flat parameter buffer.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "optim/adamw.hpp"
#include "optim/sgd.hpp"

namespace ddpx {

// Optimizer settings as given on the command line; an unset field keeps the chosen optimizer's default. A field
// that the chosen optimizer does not use is an error naming its flag.
struct OptimizerFlags {
  std::optional<float> lr;            // --lr
  std::optional<float> momentum;      // --momentum (sgd)
  std::optional<float> dampening;     // --dampening (sgd)
  std::optional<float> weight_decay;  // --weight-decay
  std::optional<bool> nesterov;       // --nesterov (sgd)
  std::optional<float> beta1;         // --beta1 (adamw)
  std::optional<float> beta2;         // --beta2 (adamw)
  std::optional<float> eps;           // --eps (adamw)
};

class Optimizer {
 public:
  using Options = std::variant<SgdOptions, AdamWOptions>;

  // name is "sgd" or "adamw"; anything else is an error naming --optimizer and the choices.
  static std::unique_ptr<Optimizer> make(std::string_view name, const OptimizerFlags& flags, size_t num_elements);
  static std::vector<std::string> names();  // the accepted --optimizer values

  Optimizer(const Options& options, size_t num_elements);  // validates options
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  std::string_view name() const;  // "sgd" or "adamw"
  const Options& options() const { return options_; }
  // Every option by its field name, e.g. {"lr": 0.01, "momentum": 0.9, ...}, floats in shortest round-trip form.
  nlohmann::json options_json() const;
  float lr() const;
  void set_lr(float lr);  // for schedules; validated like --lr

  size_t num_elements() const { return num_elements_; }
  int64_t step_count() const { return step_count_; }
  // One update; n must equal num_elements().
  void step(float* params, const float* grads, size_t n);

  // Names of the state buffers: {} (sgd without momentum), {"momentum"} (sgd), {"exp_avg", "exp_avg_sq"} (adamw).
  const std::vector<std::string>& state_names() const { return state_names_; }
  std::span<float> state(std::string_view name);  // throws naming the buffer and the valid names
  std::span<const float> state(std::string_view name) const;
  // For checkpoint restore: the next step() is step step_count + 1. The state buffers are filled by the caller.
  void set_step_count(int64_t step_count);

 private:
  size_t state_index(std::string_view name) const;

  Options options_;
  size_t num_elements_ = 0;
  int64_t step_count_ = 0;
  std::vector<std::string> state_names_;
  std::vector<std::vector<float>> state_values_;
};

}  // namespace ddpx
