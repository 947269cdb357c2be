// CommHookSpec: the --comm-hook choice parsed once (kind, PowerSGD's rank and first compressed step), and the
// factory that builds the hook it names. Kept apart from ddp/comm_hook.hpp so that the hook interface does not
// import its implementations: a new hook is a class plus one line here.
// Spellings: "allreduce", "fp16", "bf16", "powersgd:R" or "powersgd:R:START" (R = matrix approximation rank,
// START = first compressed step). --powersgd-start N is the other spelling of START: parse_comm_hook_spec() takes
// it as the default for "powersgd:R", and an explicit START wins.
// Guarantees: text() is the canonical spelling ("powersgd:R:START" always spells START), equal to the built
// hook's name(), and parse_comm_hook_spec(text()) == the spec. Errors name --comm-hook, the text and the choices.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ddp/comm_hook.hpp"

namespace ddpx {

enum class HookKind { allreduce, fp16, bf16, powersgd };

struct CommHookSpec {
  HookKind kind = HookKind::allreduce;
  int64_t powersgd_rank = 1;   // R (powersgd only)
  int64_t powersgd_start = 2;  // START (powersgd only): plain all-reduce before this synchronized step
  std::string text() const;    // the canonical spelling, what run reports and the start-up agreement record
  bool operator==(const CommHookSpec&) const = default;
};

// default_powersgd_start: START for "powersgd:R" (--powersgd-start).
CommHookSpec parse_comm_hook_spec(std::string_view text, int64_t default_powersgd_start = 2);

std::unique_ptr<CommHook> make_comm_hook(const CommHookSpec& spec);
// parse_comm_hook_spec then make_comm_hook (for tools and tests that hold the text).
std::unique_ptr<CommHook> make_comm_hook(std::string_view text);

}  // namespace ddpx
