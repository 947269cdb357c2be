// Parsing and validation of the optimizer spec (see optimizer_spec.hpp). The table of hyperparameter flags is
// written once here: which field each sets and which optimizer it belongs to.
#include "optim/optimizer_spec.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "optim/hyperparameter.hpp"

namespace ddpx {
namespace {

struct HyperparameterFlag {
  std::string_view flag;
  std::optional<OptimizerKind> only_for;  // nullopt: both optimizers
  void (*set)(OptimizerSpec&, double);
};

const std::vector<HyperparameterFlag>& hyperparameter_flags() {
  static const std::vector<HyperparameterFlag> flags = {
      {"--lr", std::nullopt, [](OptimizerSpec& s, double v) { s.lr = static_cast<float>(v); }},
      {"--weight-decay", std::nullopt, [](OptimizerSpec& s, double v) { s.weight_decay = static_cast<float>(v); }},
      {"--momentum", OptimizerKind::sgd, [](OptimizerSpec& s, double v) { s.momentum = static_cast<float>(v); }},
      {"--dampening", OptimizerKind::sgd, [](OptimizerSpec& s, double v) { s.dampening = static_cast<float>(v); }},
      {"--nesterov", OptimizerKind::sgd, [](OptimizerSpec& s, double v) { s.nesterov = v != 0; }},
      {"--beta1", OptimizerKind::adamw, [](OptimizerSpec& s, double v) { s.beta1 = static_cast<float>(v); }},
      {"--beta2", OptimizerKind::adamw, [](OptimizerSpec& s, double v) { s.beta2 = static_cast<float>(v); }},
      {"--eps", OptimizerKind::adamw, [](OptimizerSpec& s, double v) { s.eps = static_cast<float>(v); }},
  };
  return flags;
}

std::string_view kind_name(OptimizerKind kind) { return kind == OptimizerKind::sgd ? "sgd" : "adamw"; }

// A hyper-parameter is used in fp32: a value that is finite as a double can round to 0 or Inf there.
void require_fp32(double value, std::string_view flag, bool must_be_positive) {
  const float narrowed = static_cast<float>(value);
  DDPX_REQUIRE(std::isfinite(value) && std::isfinite(narrowed),
               "{} {} is not a finite fp32 number (the optimizers compute in fp32, up to 3.4e38)", flag, value);
  DDPX_REQUIRE(!must_be_positive || narrowed > 0.f,
               "{} {} is 0 in fp32 (the optimizers compute in fp32; the smallest positive value is 1.4e-45): the "
               "weights would never change; give a larger value", flag, value);
}

}  // namespace

std::string_view OptimizerSpec::name() const { return kind_name(kind); }

std::vector<std::string> OptimizerSpec::state_names() const {
  if (kind == OptimizerKind::adamw) return {"exp_avg", "exp_avg_sq"};
  if (momentum != 0.f) return {"momentum"};
  return {};
}

float OptimizerSpec::lr_at(int64_t step) const {
  DDPX_INTERNAL_ASSERT(step >= 1, "optimizer step must start at 1, got {}", step);
  if (!schedule.varies()) return lr;
  return static_cast<float>(schedule.rate_at(typed_decimal(lr), step));
}

nlohmann::json OptimizerSpec::hyperparameters_json() const {
  if (kind == OptimizerKind::sgd)
    return {{"lr", typed_decimal(lr)},
            {"momentum", typed_decimal(momentum)},
            {"dampening", typed_decimal(dampening)},
            {"weight_decay", typed_decimal(weight_decay)},
            {"nesterov", nesterov}};
  return {{"lr", typed_decimal(lr)},
          {"beta1", typed_decimal(beta1)},
          {"beta2", typed_decimal(beta2)},
          {"eps", typed_decimal(eps)},
          {"weight_decay", typed_decimal(weight_decay)}};
}

void OptimizerSpec::validate() const {
  DDPX_REQUIRE(std::isfinite(lr) && lr >= 0.f, "--lr must be a finite number >= 0, got {}", lr);
  if (schedule.varies() || schedule.min_lr != 0) schedule.validate(typed_decimal(lr));
  DDPX_REQUIRE(std::isfinite(weight_decay) && weight_decay >= 0.f,
               "--weight-decay must be a finite number >= 0, got {}", weight_decay);
  if (kind == OptimizerKind::sgd) {
    DDPX_REQUIRE(momentum >= 0.f && momentum < 1.f, "--momentum must be in [0, 1), got {}", momentum);
    DDPX_REQUIRE(dampening >= 0.f && dampening <= 1.f, "--dampening must be in [0, 1], got {}", dampening);
    DDPX_REQUIRE(!nesterov || (momentum > 0.f && dampening == 0.f),
                 "--nesterov needs --momentum > 0 and --dampening 0 (got momentum {}, dampening {}); drop "
                 "--nesterov or set the momentum",
                 momentum, dampening);
    return;
  }
  DDPX_REQUIRE(beta1 >= 0.f && beta1 < 1.f, "--beta1 must be in [0, 1), got {}", beta1);
  DDPX_REQUIRE(beta2 >= 0.f && beta2 < 1.f, "--beta2 must be in [0, 1), got {}", beta2);
  // eps keeps AdamW's update m / (sqrt(v) + eps) finite: with 0, a weight whose gradients were all 0 so far gets 0/0
  // (issue 48: `--eps 0` was accepted and the run "diverged" at step 2).
  DDPX_REQUIRE(std::isfinite(eps) && eps > 0.f,
               "--eps must be a finite number > 0 (AdamW divides by sqrt(v) + eps; 1e-8 is the default), got {}", eps);
}

std::vector<std::string> optimizer_names() { return {"sgd", "adamw"}; }

OptimizerKind parse_optimizer_kind(std::string_view name) {
  if (name == "sgd") return OptimizerKind::sgd;
  if (name == "adamw") return OptimizerKind::adamw;
  fail("unknown --optimizer '{}'; choose one of: {}", name, fmt::join(optimizer_names(), ", "));
}

std::vector<std::string_view> optimizer_flag_names() {
  std::vector<std::string_view> names;
  for (const HyperparameterFlag& f : hyperparameter_flags()) names.push_back(f.flag);
  return names;
}

OptimizerSpec optimizer_defaults(OptimizerKind kind) {
  OptimizerSpec spec;
  spec.kind = kind;
  if (kind == OptimizerKind::adamw) spec.lr = 1e-3f, spec.weight_decay = 1e-2f;  // torch.optim.AdamW's
  return spec;
}

OptimizerSpec parse_optimizer_spec(std::string_view name, const GivenFlag& given) {
  OptimizerSpec spec = optimizer_defaults(parse_optimizer_kind(name));
  for (const HyperparameterFlag& f : hyperparameter_flags()) {
    const std::optional<double> value = given(f.flag);
    if (!value) continue;
    DDPX_REQUIRE(!f.only_for || *f.only_for == spec.kind,
                 "{} applies to --optimizer {}, but this run uses --optimizer {}", f.flag, kind_name(*f.only_for),
                 name);
    if (f.flag == "--lr") DDPX_REQUIRE(*value > 0, "--lr must be positive, got {}", *value);
    if (f.flag != "--nesterov") require_fp32(*value, f.flag, /*must_be_positive=*/f.flag == "--lr");
    f.set(spec, *value);
  }
  spec.validate();
  return spec;
}

}  // namespace ddpx
