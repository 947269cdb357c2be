// NCCL transport prediction and log parsing (see nccl_transport.hpp).
#include "topology/nccl_transport.hpp"

#include <fmt/format.h>

#include <charconv>
#include <optional>
#include <regex>

#include "core/error.hpp"

namespace ddpx {

std::string predict_nccl_transport(std::string_view link, bool p2p_disabled) {
  DDPX_REQUIRE(link != "X", "predict_nccl_transport: link \"X\" is a GPU to itself; no transport is involved");
  if (link == "NET") return "NET";
  DDPX_REQUIRE(is_link_name(link), "predict_nccl_transport: unknown link \"{}\"; expected NV<count>, PIX, PXB, PHB, "
               "NODE, SYS or NET", link);
  if (p2p_disabled) return "SHM";
  if (nvlink_count(link) > 0 || link == "PIX" || link == "PXB") return "P2P/CUMEM";
  return "SHM";
}

std::string transport_family(std::string_view transport) {
  auto starts = [&](std::string_view prefix) { return transport.substr(0, prefix.size()) == prefix; };
  if (starts("SHM")) return "SHM";
  if (starts("NET")) return "NET";
  if (starts("COLLNET")) return "COLLNET";
  if (starts("P2P/")) {
    std::string_view rest = transport.substr(4);
    const size_t end = rest.find_first_of("/ ");
    return "P2P/" + std::string(rest.substr(0, end));
  }
  return std::string(transport);
}

namespace {

// NCCL's lines are a few hundred characters; std::regex recurses once per character matched, so a longer line (a
// binary file, a log without newlines) would overflow the stack. Such lines are not NCCL's and are skipped.
constexpr size_t kMaxLogLineBytes = 4096;

// A rank or channel number of the log, or nullopt when it does not fit an int (then the line is not NCCL's).
std::optional<int> log_number(const std::ssub_match& digits) {
  const std::string text = digits.str();
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

NcclTransportSummary parse_nccl_transports(std::string_view log) {
  // Channel <c>[/<n>] : <from>[<dev>] -> <to>[<dev>] [\[send\] |\[receive\] ]via <transport>
  static const std::regex line_pattern(
      R"(Channel (\d+)(?:/\d+)? : (\d+)\[[0-9a-fA-Fx]+\] -> (\d+)\[[0-9a-fA-Fx]+\](?: \[(?:send|receive)\])? via (\S+(?: pointer)?))");
  NcclTransportSummary summary;
  std::map<std::string, std::map<std::string, int>> full_counts;  // family -> transport -> count
  size_t begin = 0;
  while (begin <= log.size()) {
    size_t end = log.find('\n', begin);
    if (end == std::string_view::npos) end = log.size();
    if (end - begin > kMaxLogLineBytes) {
      begin = end + 1;
      continue;
    }
    const std::string line(log.substr(begin, end - begin));
    begin = end + 1;
    std::smatch match;
    if (!std::regex_search(line, match, line_pattern)) continue;
    const std::optional<int> channel = log_number(match[1]), from = log_number(match[2]), to = log_number(match[3]);
    if (!channel || !from || !to) continue;
    NcclConnection c;
    c.channel = *channel;
    c.from_rank = *from;
    c.to_rank = *to;
    c.transport = match[4].str();
    const std::string family = transport_family(c.transport);
    ++summary.family_counts[family];
    ++full_counts[family][c.transport];
    summary.connections.push_back(std::move(c));
  }
  int best = 0;
  for (const auto& [family, count] : summary.family_counts)
    if (count > best) {
      best = count;
      summary.main_family = family;
    }
  if (!summary.main_family.empty()) {
    int best_full = 0;
    for (const auto& [transport, count] : full_counts[summary.main_family])
      if (count > best_full) {
        best_full = count;
        summary.main_transport = transport;
      }
  }
  return summary;
}

std::string format_transport_prediction(const TopologyTable& table, bool p2p_disabled) {
  std::string out = fmt::format("# NCCL transport predicted from the topology{}\n",
                                p2p_disabled ? " (NCCL_P2P_DISABLE=1)" : "");
  for (size_t i = 0; i < table.gpus.size(); ++i)
    for (size_t j = i + 1; j < table.gpus.size(); ++j)
      out += fmt::format("GPU{} - GPU{}  {:<5} -> {}\n", i, j, table.links[i][j],
                         predict_nccl_transport(table.links[i][j], p2p_disabled));
  return out;
}

}  // namespace ddpx
