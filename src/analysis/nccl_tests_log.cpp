// nccl-tests output read as a peak table (see nccl_tests_log.hpp).
#include "analysis/nccl_tests_log.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <sstream>
#include <vector>

#include "core/error.hpp"

namespace ddpx {
namespace {

using nlohmann::json;

PeakTable finish(std::vector<PeakPoint> points, int world, const std::string& path) {
  DDPX_REQUIRE(!points.empty(), "{}: nccl-tests output without a row of positive in-place busbw", path);
  DDPX_REQUIRE(world >= 2, "{}: nccl-tests output of {} rank(s); a link is measured among 2 or more", path, world);
  return PeakTable(std::move(points), Collective::all_reduce, world, "nccl-tests");
}

// The JSON written by all_reduce_perf -J FILE: {"version": 2, "config": {"devices": [...]}, "results": [{"size",
// "count", "type", "redop", "root", "out_of_place": {...}, "in_place": {"time", "alg_bw", "bus_bw", "nwrong"}}]}.
std::optional<PeakTable> from_json_output(const json& j, const std::string& path) {
  if (!j.is_object() || !j.contains("results") || !j.contains("config") || !j.contains("nccl_version"))
    return std::nullopt;
  if (j.contains("args") && j["args"].is_array() && !j["args"].empty() && j["args"][0].is_string()) {
    const std::string program = j["args"][0].get<std::string>();
    DDPX_REQUIRE(program.find("all_reduce_perf") != std::string::npos,
                 "{}: nccl-tests output of '{}'; DDP's buckets are all-reduced: give all_reduce_perf's", path, program);
  }
  const json& config = j["config"];
  const int world = config.contains("devices") && config["devices"].is_array()
                        ? static_cast<int>(config["devices"].size()) : 0;
  std::vector<PeakPoint> points;
  DDPX_REQUIRE(j["results"].is_array(), "{}: nccl-tests JSON whose 'results' is not a list", path);
  for (const json& row : j["results"]) {
    DDPX_REQUIRE(row.is_object() && row.contains("size") && row.contains("in_place") && row["in_place"].is_object() &&
                     row["in_place"].contains("bus_bw") && row["in_place"]["bus_bw"].is_number(),
                 "{}: a nccl-tests result without size and in_place.bus_bw: {}", path, row.dump().substr(0, 200));
    const double busbw = row["in_place"]["bus_bw"].get<double>();
    if (busbw > 0) points.push_back({row["size"].get<int64_t>(), busbw});
  }
  return finish(std::move(points), world, path);
}

// The text: "# Collective test starting: all_reduce_perf", device lines "#  Rank  0 Group  0 Pid ...", then rows
// "size count type redop root time algbw busbw #wrong time algbw busbw #wrong" (the last four: in-place).
std::optional<PeakTable> from_text_output(const std::string& text, const std::string& path) {
  const bool nccl_tests = text.find("# nThread ") != std::string::npos &&
                          text.find("out-of-place") != std::string::npos && text.find("in-place") != std::string::npos;
  if (!nccl_tests) return std::nullopt;
  const size_t starting = text.find("# Collective test starting: ");
  if (starting != std::string::npos) {
    const std::string program = text.substr(starting + 28, text.find('\n', starting) - starting - 28);
    DDPX_REQUIRE(program.find("all_reduce_perf") != std::string::npos,
                 "{}: nccl-tests output of '{}'; DDP's buckets are all-reduced: give all_reduce_perf's", path, program);
  }
  int world = 0;
  std::vector<PeakPoint> points;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("#  Rank ", 0) == 0) {
      ++world;
      continue;
    }
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string field; fields >> field;) f.push_back(field);
    if (f.size() < 13 || line[0] == '#') continue;
    try {
      size_t used = 0;
      const int64_t bytes = std::stoll(f[0], &used);
      if (used != f[0].size()) continue;  // not a row (a torchrun prefix, an NCCL log line)
      const double busbw = std::stod(f[f.size() - 2]);  // in-place busbw; #wrong is last
      if (busbw > 0) points.push_back({bytes, busbw});
    } catch (const std::exception&) {
      continue;  // not a row
    }
  }
  return finish(std::move(points), world, path);
}

}  // namespace

std::optional<PeakTable> peak_table_from_nccl_tests(const std::string& text, const std::string& path) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_discarded()) return from_json_output(j, path);
  return from_text_output(text, path);
}

}  // namespace ddpx
