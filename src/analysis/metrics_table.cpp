// --metrics lines as rows and CSV; see metrics_table.hpp.
#include "analysis/metrics_table.hpp"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.hpp"
#include "io/posix_file.hpp"

namespace ddpx {
namespace {

constexpr uint64_t kMaxMetricsBytes = uint64_t{4} << 30;  // a metrics line per step: 4 GiB is millions of steps

std::string csv_number(double value) { return std::isfinite(value) ? fmt::format("{}", value) : ""; }

std::string csv_text(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char ch : text) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return quoted + "\"";
}

}  // namespace

MetricsFile read_metrics_file(const std::string& path) {
  // InputFile: a FIFO, /dev/zero or a folder is refused naming it (issue 48: they hung or read as empty).
  std::istringstream in(read_small_file(path, kMaxMetricsBytes, "--metrics (a file written by `ddpx train --metrics`)"));
  MetricsFile file;
  int line_number = 0, attempt = 1;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    if (line.empty()) continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    DDPX_REQUIRE(j.is_object() && j.contains("kind") && j["kind"].is_string() && j.contains("step") &&
                     j["step"].is_number(),
                 "--metrics {} line {}: not a metrics object (kind, step, ...)", path, line_number);
    const double step = j["step"].get<double>();
    // A chart spans max - min of each panel: values beyond +-1e300 (or a step beyond 1e15) would overflow it.
    DDPX_REQUIRE(std::isfinite(step) && step >= 0 && step <= 1e15,
                 "--metrics {} line {}: step {} is not a step number (0 to 1e15)", path, line_number, step);
    const std::string kind = j["kind"].get<std::string>();
    const auto number = [&](const char* key) -> double {
      if (!j.contains(key) || !j[key].is_number()) return NAN;
      const double value = j[key].get<double>();
      DDPX_REQUIRE(!std::isfinite(value) || std::abs(value) <= 1e300,
                   "--metrics {} line {}: {} = {} is beyond the +-1e300 a curve can be drawn over", path,
                   line_number, key, value);
      return value;
    };
    DDPX_REQUIRE(!j.contains("weights") || j["weights"].is_string(),
                 "--metrics {} line {}: 'weights' is not a string (model or ema)", path, line_number);
    if (kind == "run") {
      if (!file.attempt_starts.empty()) ++attempt;
      file.attempt_starts.push_back(j["step"].get<int64_t>());
      continue;
    }
    if (kind != "step" && kind != "eval") continue;  // a kind of a later ddpx: not ours to draw
    MetricsRow row;
    row.kind = kind;
    row.attempt = attempt;
    row.step = j["step"].get<int64_t>();
    row.epoch = number("epoch"), row.time = number("time"), row.elapsed = number("elapsed");
    row.loss = number("loss");
    if (kind == "step") {
      row.lr = number("lr"), row.grad_norm = number("grad_norm"), row.images_per_s = number("images_per_s");
      row.step_ms = number("step_ms"), row.data_wait_ms = number("data_wait_ms");
    } else {
      row.top1 = number("top1"), row.top5 = number("top5"), row.count = number("count");
      row.weights = j.contains("weights") && j["weights"].is_string() ? j["weights"].get<std::string>() : "model";
    }
    file.rows.push_back(std::move(row));
  }
  return file;
}

std::string metrics_csv(const MetricsFile& metrics) {
  std::string csv;
  for (const char* column : kMetricsCsvColumns) csv += (csv.empty() ? "" : ",") + std::string(column);
  csv += "\r\n";
  for (const MetricsRow& r : metrics.rows) {
    csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\r\n", csv_text(r.kind), r.attempt, r.step,
                       csv_number(r.epoch), csv_number(r.time), csv_number(r.elapsed), csv_number(r.lr),
                       csv_number(r.loss), csv_number(r.grad_norm), csv_number(r.images_per_s), csv_number(r.step_ms),
                       csv_number(r.data_wait_ms), csv_number(r.top1), csv_number(r.top5), csv_number(r.count),
                       csv_text(r.weights));
  }
  return csv;
}

}  // namespace ddpx
