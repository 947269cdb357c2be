// The hook catalogue, the --comm-hook parser and each hook's wire messages (see hook_catalogue.hpp).
#include "comm_plan/hook_catalogue.hpp"

#include <fmt/format.h>

#include <charconv>

#include "comm_plan/powersgd_layout.hpp"
#include "core/error.hpp"
#include "core/internal_assert.hpp"

namespace ddpx {
namespace {

// Hooks without arguments: "bf16" only, never "bf16:...".
std::vector<int64_t> no_args(std::string_view flag, std::string_view text, std::string_view args,
                             const CommHookDefaults&) {
  DDPX_REQUIRE(args.empty(), "{} '{}': this hook takes no arguments", flag, text);
  return {};
}

int64_t parse_non_negative(std::string_view flag, std::string_view digits, std::string_view text,
                           std::string_view what) {
  int64_t value = -1;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  DDPX_REQUIRE(error == std::errc() && end == digits.data() + digits.size() && value >= 0,
               "{} '{}': {} '{}' is not a non-negative integer", flag, text, what, digits);
  return value;
}

// ":R" or ":R:START" -> {R, START}, START from defaults.powersgd_start when not spelled.
std::vector<int64_t> powersgd_args(std::string_view flag, std::string_view text, std::string_view args,
                                   const CommHookDefaults& defaults) {
  DDPX_REQUIRE(!args.empty() && args.front() == ':',
               "{} '{}': PowerSGD needs its rank, powersgd:R or powersgd:R:START (e.g. powersgd:4)", flag, text);
  const std::string_view rest = args.substr(1);
  const size_t colon = rest.find(':');
  const int64_t rank = parse_non_negative(flag, rest.substr(0, colon), text, "rank");
  DDPX_REQUIRE(rank >= 1, "{} '{}': the PowerSGD rank must be at least 1", flag, text);
  const int64_t start = colon == std::string_view::npos
                            ? defaults.powersgd_start
                            : parse_non_negative(flag, rest.substr(colon + 1), text, "start step");
  DDPX_REQUIRE(start >= 0, "--powersgd-start {}: must be 0 or more", start);
  return {rank, start};
}

}  // namespace

const std::vector<CommHookEntry>& comm_hooks() {
  // kind, name, syntax, help, wire, lossy, reads_bucket_alone, wire_args, parse_args
  static const std::vector<CommHookEntry> hooks = {
      {HookKind::allreduce, "allreduce", "allreduce", "fp32 all-reduce, averaged, as PyTorch's default",
       WireForm::fp32, false, false, 0, no_args},
      {HookKind::fp16, "fp16", "fp16", "cast to fp16 on the wire, half the bytes", WireForm::half, false, true, 0,
       no_args},
      {HookKind::bf16, "bf16", "bf16", "cast to bf16 on the wire, half the bytes", WireForm::half, false, true, 0,
       no_args},
      {HookKind::powersgd, "powersgd", "powersgd:R[:START]",
       "rank-R compression with error feedback, plain all-reduce before step START; reports record "
       "powersgd:R:START",
       WireForm::low_rank, true, true, 1, powersgd_args},
  };
  return hooks;
}

const CommHookEntry* find_comm_hook(std::string_view text) {
  const std::string_view name = text.substr(0, text.find(':'));
  for (const CommHookEntry& entry : comm_hooks())
    if (entry.name == name) return &entry;
  return nullptr;
}

const CommHookEntry& comm_hook_entry(const CommHookSpec& spec) {
  const CommHookEntry* entry = find_comm_hook(spec.name);
  DDPX_INTERNAL_ASSERT(entry != nullptr && entry->name == spec.name, "hook '{}' is not in the catalogue",
                       spec.name);
  return *entry;
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

CommHookSpec parse_comm_hook_spec(std::string_view text, const CommHookDefaults& defaults, std::string_view flag) {
  const std::string_view name = text.substr(0, text.find(':'));
  const CommHookEntry* entry = find_comm_hook(text);
  if (!entry) fail("{} '{}' is not a hook: expected {}", flag, text, comm_hook_syntaxes(", "));
  return CommHookSpec{std::string(name), entry->parse_args(flag, text, text.substr(name.size()), defaults)};
}

CommHookSpec parse_comm_hook_spec(std::string_view text, int64_t default_powersgd_start) {
  CommHookDefaults defaults;
  defaults.powersgd_start = default_powersgd_start;
  return parse_comm_hook_spec(text, defaults);
}

bool comm_hook_is_lossy(const CommHookSpec& spec) { return comm_hook_entry(spec).lossy; }

bool comm_hook_compresses(const CommHookSpec& spec) { return comm_hook_entry(spec).wire != WireForm::fp32; }

bool comm_hook_reads_bucket(const CommHookSpec& spec, int world) {
  return world > 1 || comm_hook_entry(spec).reads_bucket_alone;
}

CommHookSpec wire_shape(const CommHookSpec& spec) {
  const size_t kept = std::min(spec.args.size(), comm_hook_entry(spec).wire_args);
  return CommHookSpec{spec.name, std::vector<int64_t>(spec.args.begin(), spec.args.begin() + kept)};
}

std::vector<int64_t> comm_hook_wire_messages(const CommHookSpec& spec, const BucketPlan& plan, size_t bucket) {
  const auto elements = static_cast<int64_t>(plan[bucket].numel());
  switch (comm_hook_entry(spec).wire) {
    case WireForm::fp32: return {elements * 4};
    case WireForm::half: return {elements * 2};
    case WireForm::low_rank: {
      DDPX_INTERNAL_ASSERT(!spec.args.empty(), "hook '{}' has no rank argument", spec.text());
      const CompressionLayout layout = plan_compression(plan, bucket, spec.args[0], kPowerSgdMinCompressionRate);
      const auto uncompressed = static_cast<int64_t>(layout.uncompressed_elements);
      if (layout.matrices.empty()) return {uncompressed * 4};
      return {(uncompressed + static_cast<int64_t>(layout.p_elements)) * 4,
              static_cast<int64_t>(layout.q_elements) * 4};
    }
  }
  DDPX_INTERNAL_FAIL("hook '{}' has no wire form", spec.text());
}

}  // namespace ddpx
