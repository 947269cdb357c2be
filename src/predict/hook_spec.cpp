// Parsing hook names for ddpx predict (see hook_spec.hpp).
#include "predict/hook_spec.hpp"

#include <fmt/format.h>

#include <charconv>

#include "core/error.hpp"

namespace ddpx::predict {

std::string HookSpec::name() const {
  switch (kind) {
    case HookKind::allreduce: return "allreduce";
    case HookKind::fp16: return "fp16";
    case HookKind::bf16: return "bf16";
    case HookKind::powersgd: return fmt::format("powersgd:{}", powersgd_rank);
  }
  return "unknown";
}

HookSpec parse_hook_spec(std::string_view text, std::string_view flag) {
  if (text == "allreduce") return {HookKind::allreduce, 0};
  if (text == "fp16") return {HookKind::fp16, 0};
  if (text == "bf16") return {HookKind::bf16, 0};
  constexpr std::string_view prefix = "powersgd:";
  if (text.substr(0, prefix.size()) == prefix) {
    const std::string_view rest = text.substr(prefix.size());
    const size_t colon = rest.find(':');
    const std::string_view digits = rest.substr(0, colon);
    const auto whole = [](std::string_view number, int64_t& value) {
      const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
      return error == std::errc() && end == number.data() + number.size();
    };
    int64_t rank = 0, start = 0;
    const bool start_ok = colon == std::string_view::npos || (whole(rest.substr(colon + 1), start) && start >= 0);
    if (whole(digits, rank) && rank >= 1 && rank <= 1024 && start_ok) return {HookKind::powersgd, rank};
  }
  fail("{} '{}': expected allreduce, fp16, bf16, powersgd:R or powersgd:R:S (R a whole number from 1 to 1024, S "
       "one from 0), as `ddpx train --comm-hook` spells them", flag, text.substr(0, 60));
}

}  // namespace ddpx::predict
