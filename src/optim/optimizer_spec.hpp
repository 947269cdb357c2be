// OptimizerSpec: the one description of a run's optimizer, parsed once from the flags. It carries the kind, the
// hyperparameters as fp32 (what the updates compute with), the names of the state buffers (as checkpoints call
// them), whether a replayed CUDA graph of a step is exact, and the learning rate at a step. The per-step scalars
// derived from it (optim/sgd.hpp, optim/adamw.hpp) are computed in one place for both engines.
// Guarantees: parse_optimizer_spec() and validate() throw ddpx::Error naming the flag (--optimizer, --lr,
// --momentum, ...) and the accepted values; a spec that passed validate() gives finite, in-range fp32 scalars.
// The defaults per kind (optimizer_defaults): AdamW's are PyTorch's torch.optim.AdamW (lr 1e-3, weight decay 1e-2,
// betas 0.9/0.999, eps 1e-8); SGD keeps the seed article's lr 0.01 (PyTorch's SGD defaults to 1e-3 since 2.x, which
// the seed's recipe did not use), momentum 0, weight decay 0.
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "optim/lr_schedule.hpp"

namespace ddpx {

enum class OptimizerKind { sgd, adamw };

struct OptimizerSpec {
  OptimizerKind kind = OptimizerKind::sgd;
  float lr = 0.01f;
  float weight_decay = 0.f;  // SGD: L2 added to the gradient; AdamW: decoupled
  // sgd
  float momentum = 0.f, dampening = 0.f;
  bool nesterov = false;
  // adamw
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  // --lr-schedule and its warm-up (optim/lr_schedule.hpp); constant by default: every step's rate is `lr`
  LrSchedule schedule;

  std::string_view name() const;  // "sgd" or "adamw", the --optimizer spelling
  // The state buffers, by the names io/checkpoint stores: {} (sgd without momentum), {"momentum"} (sgd),
  // {"exp_avg", "exp_avg_sq"} (adamw).
  std::vector<std::string> state_names() const;
  // Whether a CUDA graph captured at a step after the first replays every later step exactly: the step number
  // is frozen in the graph, and only SGD's update ignores it after step 1 (AdamW's bias corrections change).
  // A varying learning rate is frozen in the graph too (until the device-read rate of kernels/recipe.hpp is
  // verified on a GPU), so such a run steps eagerly.
  bool graph_replay_exact() const { return kind == OptimizerKind::sgd && !schedule.varies(); }
  // The learning rate at step `step` (1-based): `lr` itself without a schedule, else schedule.rate_at(lr, step) in
  // fp32. Every update asks here, so the schedule is one place.
  float lr_at(int64_t step) const;
  // Every hyperparameter of the kind by its field name, floats as typed decimals: {"lr": 0.01, "momentum": 0.9, ...}.
  nlohmann::json hyperparameters_json() const;
  // Throws ddpx::Error naming the flag and the value when a hyperparameter is out of range for the kind.
  void validate() const;
  bool operator==(const OptimizerSpec&) const = default;
};

std::vector<std::string> optimizer_names();  // the accepted --optimizer values
// The hyperparameters a run of this kind gets for the flags it does not give (see the header).
OptimizerSpec optimizer_defaults(OptimizerKind kind);
// "sgd" or "adamw"; anything else is an error naming --optimizer and the choices.
OptimizerKind parse_optimizer_kind(std::string_view name);

// The value of a hyperparameter flag ("--lr", "--momentum", "--dampening", "--nesterov" as 1/0, "--weight-decay",
// "--beta1", "--beta2", "--eps") when the user gave it, else nullopt (the default applies).
using GivenFlag = std::function<std::optional<double>(std::string_view flag)>;
// The flags parse_optimizer_spec() asks `given` about.
std::vector<std::string_view> optimizer_flag_names();
// Parses --optimizer NAME and the hyperparameter flags given: each must be a finite fp32 number (--lr also
// nonzero in fp32), must belong to the chosen optimizer ("--momentum applies to --optimizer sgd, but this run
// uses --optimizer adamw"), and the result passes validate().
OptimizerSpec parse_optimizer_spec(std::string_view name, const GivenFlag& given);

}  // namespace ddpx
