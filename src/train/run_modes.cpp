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

}  // namespace

Device parse_device(std::string_view text) {
  if (auto mode = find(kDevices, text)) return *mode;
  fail("--device '{}' is not known; choose {}", text, choices(kDevices));
}

GraphPolicy parse_graph_policy(std::string_view text) {
  if (auto mode = find(kGraphPolicies, text)) return *mode;
  fail("--cuda-graph '{}' is not known; choose {}", text, choices(kGraphPolicies));
}

OverlapPolicy parse_overlap_policy(std::string_view text) {
  if (auto mode = find(kOverlapPolicies, text)) return *mode;
  fail("--optimizer-overlap '{}' is not known; choose {}", text, choices(kOverlapPolicies));
}

WeightGradPolicy parse_weight_grad_policy(std::string_view text) {
  if (auto mode = find(kWeightGradPolicies, text)) return *mode;
  fail("--weight-grads '{}' is not known; choose {}", text, choices(kWeightGradPolicies));
}

std::string_view device_name(Device device) { return name_of(kDevices, device); }
std::string_view graph_policy_name(GraphPolicy policy) { return name_of(kGraphPolicies, policy); }
std::string_view overlap_policy_name(OverlapPolicy policy) { return name_of(kOverlapPolicies, policy); }
std::string_view weight_grad_policy_name(WeightGradPolicy policy) { return name_of(kWeightGradPolicies, policy); }

}  // namespace ddpx
