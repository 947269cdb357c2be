// Parsing and spelling of the run modes (see run_modes.hpp). Each table is written once; the messages are those
// `ddpx train` always printed.
#include "train/run_modes.hpp"

#include <array>
#include <string>
#include <optional>
#include <utility>

#include "core/error.hpp"
#include "core/internal_assert.hpp"

namespace ddpx {
namespace {

template <typename Mode, size_t N>
using Table = std::array<std::pair<Mode, std::string_view>, N>;

constexpr Table<Device, 2> kDevices{{{Device::cpu, "cpu"}, {Device::cuda, "cuda"}}};
constexpr Table<GraphPolicy, 3> kGraphPolicies{
    {{GraphPolicy::automatic, "auto"}, {GraphPolicy::on, "on"}, {GraphPolicy::off, "off"}}};
constexpr Table<OverlapPolicy, 3> kOverlapPolicies{
    {{OverlapPolicy::automatic, "auto"}, {OverlapPolicy::on, "on"}, {OverlapPolicy::off, "off"}}};
constexpr Table<WeightGradPolicy, 2> kWeightGradPolicies{
    {{WeightGradPolicy::automatic, "auto"}, {WeightGradPolicy::fp32, "fp32"}}};
constexpr Table<NormalizeOn, 2> kNormalizeOn{{{NormalizeOn::host, "host"}, {NormalizeOn::device, "device"}}};

template <typename Mode, size_t N>
std::optional<Mode> find(const Table<Mode, N>& table, std::string_view text) {
  for (const auto& [mode, name] : table)
    if (name == text) return mode;
  return std::nullopt;
}

template <typename Mode, size_t N>
std::string_view name_of(const Table<Mode, N>& table, Mode mode) {
  for (const auto& [m, name] : table)
    if (m == mode) return name;
  DDPX_INTERNAL_FAIL("a mode outside its table ({})", static_cast<int>(mode));
}

// "auto, on or off": the table's spellings in order, as the refusals list them.
template <typename Mode, size_t N>
std::string choices(const Table<Mode, N>& table) {
  std::string out;
  for (size_t i = 0; i < N; ++i) {
    if (i > 0) out += i + 1 == N ? " or " : ", ";
    out += table[i].second;
  }
  return out;
}

// The mode `text` names in `table`; else the refusal naming the flag, the text and every choice.
template <typename Mode, size_t N>
Mode parse_mode(const Table<Mode, N>& table, std::string_view flag, std::string_view text) {
  if (auto mode = find(table, text)) return *mode;
  fail("{} '{}' is not known; choose {}", flag, text, choices(table));
}

}  // namespace

Device parse_device(std::string_view text) { return parse_mode(kDevices, "--device", text); }
GraphPolicy parse_graph_policy(std::string_view text) { return parse_mode(kGraphPolicies, "--cuda-graph", text); }
OverlapPolicy parse_overlap_policy(std::string_view text) {
  return parse_mode(kOverlapPolicies, "--optimizer-overlap", text);
}
WeightGradPolicy parse_weight_grad_policy(std::string_view text) {
  return parse_mode(kWeightGradPolicies, "--weight-grads", text);
}
NormalizeOn parse_normalize_on(std::string_view text) { return parse_mode(kNormalizeOn, "--normalize", text); }

ResumeMode resume_mode(std::string_view resume) {
  if (resume.empty()) return ResumeMode::none;
  return resume == "auto" ? ResumeMode::newest : ResumeMode::checkpoint;
}

std::string_view device_name(Device device) { return name_of(kDevices, device); }
std::string_view graph_policy_name(GraphPolicy policy) { return name_of(kGraphPolicies, policy); }
std::string_view overlap_policy_name(OverlapPolicy policy) { return name_of(kOverlapPolicies, policy); }
std::string_view weight_grad_policy_name(WeightGradPolicy policy) { return name_of(kWeightGradPolicies, policy); }
std::string_view normalize_on_name(NormalizeOn where) { return name_of(kNormalizeOn, where); }

}  // namespace ddpx
