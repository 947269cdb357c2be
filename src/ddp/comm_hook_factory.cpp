// The --comm-hook parser and the hook factory (see comm_hook_factory.hpp).
#include "ddp/comm_hook_factory.hpp"

#include <fmt/format.h>

#include <charconv>

#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "ddp/allreduce_hook.hpp"
#include "ddp/cast_hook.hpp"
#include "ddp/powersgd_hook.hpp"

namespace ddpx {
namespace {

int64_t parse_non_negative(std::string_view text, std::string_view spec, std::string_view what) {
  int64_t value = -1;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  DDPX_REQUIRE(error == std::errc() && end == text.data() + text.size() && value >= 0,
               "--comm-hook '{}': {} '{}' is not a non-negative integer", spec, what, text);
  return value;
}

}  // namespace

std::string CommHookSpec::text() const {
  switch (kind) {
    case HookKind::allreduce: return "allreduce";
    case HookKind::fp16: return "fp16";
    case HookKind::bf16: return "bf16";
    case HookKind::powersgd: return fmt::format("powersgd:{}:{}", powersgd_rank, powersgd_start);
  }
  DDPX_INTERNAL_FAIL("a hook kind outside the table ({})", static_cast<int>(kind));
}

CommHookSpec parse_comm_hook_spec(std::string_view text, int64_t default_powersgd_start) {
  CommHookSpec spec;
  if (text == "allreduce") return spec;
  if (text == "fp16") return spec.kind = HookKind::fp16, spec;
  if (text == "bf16") return spec.kind = HookKind::bf16, spec;
  constexpr std::string_view kPowerSgd = "powersgd:";
  if (text.substr(0, kPowerSgd.size()) == kPowerSgd) {
    const std::string_view rest = text.substr(kPowerSgd.size());
    const size_t colon = rest.find(':');
    spec.kind = HookKind::powersgd;
    spec.powersgd_rank = parse_non_negative(rest.substr(0, colon), text, "rank");
    DDPX_REQUIRE(spec.powersgd_rank >= 1, "--comm-hook '{}': the PowerSGD rank must be at least 1", text);
    spec.powersgd_start = colon == std::string_view::npos
                              ? default_powersgd_start
                              : parse_non_negative(rest.substr(colon + 1), text, "start step");
    DDPX_REQUIRE(spec.powersgd_start >= 0, "--powersgd-start {}: must be 0 or more", spec.powersgd_start);
    return spec;
  }
  fail("--comm-hook '{}' is not a hook: expected allreduce, fp16, bf16, powersgd:R or powersgd:R:START "
       "(R = rank of the approximation, START = first compressed step)", text);
}

std::unique_ptr<CommHook> make_comm_hook(const CommHookSpec& spec) {
  switch (spec.kind) {
    case HookKind::allreduce: return std::make_unique<AllreduceHook>();
    case HookKind::fp16: return std::make_unique<CastHook>(WireFormat::fp16);
    case HookKind::bf16: return std::make_unique<CastHook>(WireFormat::bf16);
    case HookKind::powersgd: {
      PowerSgdOptions options;
      options.rank = spec.powersgd_rank;
      options.start_step = spec.powersgd_start;
      return std::make_unique<PowerSgdHook>(options);
    }
  }
  DDPX_INTERNAL_FAIL("a hook kind outside the table ({})", static_cast<int>(spec.kind));
}

std::unique_ptr<CommHook> make_comm_hook(std::string_view text) { return make_comm_hook(parse_comm_hook_spec(text)); }

}  // namespace ddpx
