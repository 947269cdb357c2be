// --metrics JSON Lines (see metrics_log.hpp).
#include "train/metrics_log.hpp"

#include <cmath>

#include <algorithm>
#include <filesystem>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace ddpx {
namespace {

nlohmann::json optional_number(std::optional<double> value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

// Keeps the file's lines up to step `resumed_at` (the "run" lines of earlier attempts, and their step and eval lines
// up to it); drops what a stopped attempt wrote after it, and a line it left half written. Returns the last step the
// file held (0: none).
int64_t keep_lines_up_to(const std::string& path, int64_t resumed_at) {
  std::ifstream in(path);
  if (!in) return 0;
  std::vector<std::string> kept;
  int64_t reached = 0;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json object = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!object.is_object() || !object.contains("step") || !object["step"].is_number_integer()) continue;
    const int64_t step = object["step"].get<int64_t>();
    reached = std::max(reached, step);
    if (step <= resumed_at) kept.push_back(line);
  }
  in.close();
  const std::string rewritten = path + ".resumed";
  {
    std::ofstream out(rewritten, std::ios::trunc);
    for (const std::string& line : kept) out << line << '\n';
    DDPX_REQUIRE(out.good(), "--metrics {}: rewriting it for the resumed run failed (disk full?)", path);
  }
  std::error_code error;
  std::filesystem::rename(rewritten, path, error);
  DDPX_REQUIRE(!error, "--metrics {}: replacing it for the resumed run failed: {}", path, error.message());
  return reached;
}

}  // namespace

MetricsLog::MetricsLog(const std::string& path, int64_t resumed_at)
    : path_(path), previous_reached_(resumed_at > 0 ? keep_lines_up_to(path, resumed_at) : 0),
      out_(path, resumed_at > 0 ? std::ios::app : std::ios::trunc) {
  DDPX_REQUIRE(out_.good(), "--metrics {}: cannot open it for writing; give a writable file path", path);
}

void MetricsLog::write(nlohmann::json line) {
  const double unix_ms = static_cast<double>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                 std::chrono::system_clock::now().time_since_epoch())
                                                 .count());
  line["time"] = unix_ms / 1e3;
  const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - opened_).count();
  line["elapsed"] = std::round(elapsed_s * 1e3) / 1e3;
  out_ << line.dump() << '\n';
  out_.flush();
  DDPX_REQUIRE(out_.good(), "--metrics {}: writing failed (disk full?)", path_);
}

void MetricsLog::run(int64_t start_step, const std::string& model, const std::string& data,
                     const std::vector<std::string>& classes) {
  nlohmann::json line{{"kind", "run"}, {"step", start_step}, {"model", model}, {"data", data}, {"classes", classes}};
  if (previous_reached_ > start_step) line["previous_attempt_reached"] = previous_reached_;
  write(std::move(line));
}

void MetricsLog::step(int64_t step, std::optional<double> epoch, double lr, double loss,
                      std::optional<double> grad_norm, double images_per_s, double step_ms, double data_wait_ms) {
  write(nlohmann::json{{"kind", "step"}, {"step", step}, {"epoch", optional_number(epoch)}, {"lr", lr},
                       {"loss", loss}, {"grad_norm", optional_number(grad_norm)}, {"images_per_s", images_per_s},
                       {"step_ms", step_ms}, {"data_wait_ms", data_wait_ms}});
}

void MetricsLog::end(int64_t step, const std::string& reason) {
  write(nlohmann::json{{"kind", "end"}, {"step", step}, {"reason", reason}});
}

void MetricsLog::eval(int64_t step, std::optional<double> epoch, const EvalResult& result,
                      const std::string& weights) {
  write(nlohmann::json{{"kind", "eval"}, {"step", step}, {"epoch", optional_number(epoch)}, {"loss", result.loss},
                       {"top1", result.top1}, {"top5", result.top5}, {"count", result.count}, {"weights", weights}});
}

}  // namespace ddpx
