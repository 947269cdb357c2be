// HookSpec: a communication hook as `ddpx predict` models it, parsed once from train's --comm-hook spelling.
// Guarantees: parse_hook_spec accepts exactly what `ddpx train --comm-hook` accepts ("allreduce", "fp16", "bf16",
// "powersgd:R" with R >= 1, and "powersgd:R:S", the canonical spelling train's run reports record: S, the first
// compressed step, is read and dropped, since the model is of the compressed steps) and names the flag and the
// value otherwise; name() gives the spelling without S back.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace ddpx::predict {

enum class HookKind { allreduce, fp16, bf16, powersgd };

struct HookSpec {
  HookKind kind = HookKind::allreduce;
  int64_t powersgd_rank = 0;  // R of powersgd:R; 0 for the other hooks
  std::string name() const;
  bool operator==(const HookSpec&) const = default;
};

HookSpec parse_hook_spec(std::string_view text, std::string_view flag);

}  // namespace ddpx::predict
