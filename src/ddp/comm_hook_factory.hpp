// The communication hooks' registry, the --comm-hook spec parsed once, and the factory that builds the hook it
// names. Kept apart from ddp/comm_hook.hpp so that the hook interface does not import its implementations.
// Adding a hook is its class plus one entry in comm_hooks() (comm_hook_factory.cpp): its name, syntax, one line of
// help, how its arguments are read and how it is built; --help, the error for an unknown hook and the canonical
// spelling all come from that table (docs/design.md, "Adding a hook").
// Spellings: "allreduce", "fp16", "bf16", "powersgd:R" or "powersgd:R:START" (R = matrix approximation rank,
// START = first compressed step). --powersgd-start N is the other spelling of START: parse_comm_hook_spec() takes
// it as the default for "powersgd:R", and an explicit START wins.
// Guarantees: text() is the canonical spelling (every argument spelled, "powersgd:R:START"), equal to the built
// hook's name(), and parse_comm_hook_spec(text()) == the spec. Errors name --comm-hook, the text and the choices.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ddp/comm_hook.hpp"

namespace ddpx {

// Defaults that flags other than --comm-hook give to a hook's arguments.
struct CommHookDefaults {
  int64_t powersgd_start = 2;  // --powersgd-start
};

struct CommHookSpec {
  std::string name = "allreduce";  // a comm_hooks() entry
  std::vector<int64_t> args;       // its arguments, canonical (defaults filled in): powersgd: {R, START}
  std::string text() const;        // the canonical spelling, what run reports and the start-up agreement record
  bool operator==(const CommHookSpec&) const = default;
};

struct CommHookEntry {
  std::string_view name;    // "powersgd"
  std::string_view syntax;  // "powersgd:R[:START]", as --help and errors show it
  std::string_view help;    // what it does, in a few words
  // The canonical arguments from the text after the name ("" or ":..."); `text` is the whole spec, for errors
  // (which name --comm-hook).
  std::vector<int64_t> (*parse_args)(std::string_view text, std::string_view args, const CommHookDefaults& defaults);
  std::unique_ptr<CommHook> (*make)(const std::vector<int64_t>& args);
};

// The registry, in the order --help lists the hooks.
const std::vector<CommHookEntry>& comm_hooks();
// "allreduce | fp16 | bf16 | powersgd:R[:START]": the syntaxes, for help texts and errors.
std::string comm_hook_syntaxes(std::string_view separator = " | ");

CommHookSpec parse_comm_hook_spec(std::string_view text, const CommHookDefaults& defaults = {});
// default_powersgd_start: START for "powersgd:R" (--powersgd-start).
CommHookSpec parse_comm_hook_spec(std::string_view text, int64_t default_powersgd_start);

std::unique_ptr<CommHook> make_comm_hook(const CommHookSpec& spec);
// parse_comm_hook_spec then make_comm_hook (for tools and tests that hold the text).
std::unique_ptr<CommHook> make_comm_hook(std::string_view text);

}  // namespace ddpx
