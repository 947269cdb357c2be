// make_comm_hook: the --comm-hook spec parser.
#include "ddp/comm_hook.hpp"

#include <charconv>

#include "core/error.hpp"
#include "ddp/allreduce_hook.hpp"
#include "ddp/cast_hook.hpp"
#include "ddp/powersgd_hook.hpp"

namespace ddpx {
namespace {

int64_t parse_positive(std::string_view text, std::string_view spec, std::string_view what) {
  int64_t value = -1;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  DDPX_REQUIRE(error == std::errc() && end == text.data() + text.size() && value >= 0,
               "--comm-hook '{}': {} '{}' is not a non-negative integer", spec, what, text);
  return value;
}

}  // namespace

std::unique_ptr<CommHook> make_comm_hook(std::string_view spec) {
  if (spec == "allreduce") return std::make_unique<AllreduceHook>();
  if (spec == "fp16") return std::make_unique<CastHook>(WireFormat::fp16);
  if (spec == "bf16") return std::make_unique<CastHook>(WireFormat::bf16);
  constexpr std::string_view kPowerSgd = "powersgd:";
  if (spec.substr(0, kPowerSgd.size()) == kPowerSgd) {
    std::string_view rest = spec.substr(kPowerSgd.size());
    PowerSgdOptions options;
    size_t colon = rest.find(':');
    options.rank = parse_positive(rest.substr(0, colon), spec, "rank");
    DDPX_REQUIRE(options.rank >= 1, "--comm-hook '{}': the PowerSGD rank must be at least 1", spec);
    if (colon != std::string_view::npos) options.start_step = parse_positive(rest.substr(colon + 1), spec, "start step");
    return std::make_unique<PowerSgdHook>(options);
  }
  fail("--comm-hook '{}' is not a hook: expected allreduce, fp16, bf16, powersgd:R or powersgd:R:START "
       "(R = rank of the approximation, START = first compressed step)", spec);
}

}  // namespace ddpx
