// The hook registry, the --comm-hook parser and the factory (see comm_hook_factory.hpp).
#include "ddp/comm_hook_factory.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "ddp/allreduce_hook.hpp"
#include "ddp/cast_hook.hpp"
#include "ddp/powersgd_hook.hpp"

namespace ddpx {
namespace {

// Hooks without arguments: "bf16" only, never "bf16:...".
std::vector<int64_t> no_args(std::string_view text, std::string_view args, const CommHookDefaults&) {
  DDPX_REQUIRE(args.empty(), "--comm-hook '{}': this hook takes no arguments", text);
  return {};
}

template <WireFormat kFormat>
std::unique_ptr<CommHook> make_cast_hook(const std::vector<int64_t>&) {
  return std::make_unique<CastHook>(kFormat);
}

const CommHookEntry& entry_named(std::string_view name) {
  for (const CommHookEntry& entry : comm_hooks())
    if (entry.name == name) return entry;
  DDPX_INTERNAL_FAIL("hook '{}' is not in the registry", name);
}

}  // namespace

const std::vector<CommHookEntry>& comm_hooks() {
  static const std::vector<CommHookEntry> hooks = {
      {"allreduce", "allreduce", "fp32 all-reduce, averaged, as PyTorch's default", no_args,
       [](const std::vector<int64_t>&) -> std::unique_ptr<CommHook> { return std::make_unique<AllreduceHook>(); }},
      {"fp16", "fp16", "cast to fp16 on the wire, half the bytes", no_args, make_cast_hook<WireFormat::fp16>},
      {"bf16", "bf16", "cast to bf16 on the wire, half the bytes", no_args, make_cast_hook<WireFormat::bf16>},
      {"powersgd", "powersgd:R[:START]",
       "rank-R compression with error feedback, plain all-reduce before step START; reports record "
       "powersgd:R:START",
       PowerSgdHook::parse_args, PowerSgdHook::make},
  };
  return hooks;
}

std::string comm_hook_syntaxes(std::string_view separator) {
  std::string out;
  for (const CommHookEntry& entry : comm_hooks()) {
    if (!out.empty()) out += separator;
    out += entry.syntax;
  }
  return out;
}

std::string CommHookSpec::text() const {
  std::string out = name;
  for (int64_t arg : args) out += fmt::format(":{}", arg);
  return out;
}

CommHookSpec parse_comm_hook_spec(std::string_view text, const CommHookDefaults& defaults) {
  const std::string_view name = text.substr(0, text.find(':'));
  for (const CommHookEntry& entry : comm_hooks())
    if (entry.name == name) return CommHookSpec{std::string(name), entry.parse_args(text, text.substr(name.size()), defaults)};
  fail("--comm-hook '{}' is not a hook: expected {}", text, comm_hook_syntaxes(", "));
}

CommHookSpec parse_comm_hook_spec(std::string_view text, int64_t default_powersgd_start) {
  CommHookDefaults defaults;
  defaults.powersgd_start = default_powersgd_start;
  return parse_comm_hook_spec(text, defaults);
}

std::unique_ptr<CommHook> make_comm_hook(const CommHookSpec& spec) { return entry_named(spec.name).make(spec.args); }

std::unique_ptr<CommHook> make_comm_hook(std::string_view text) { return make_comm_hook(parse_comm_hook_spec(text)); }

}  // namespace ddpx
