// --metrics JSON Lines (see metrics_log.hpp).
#include "train/metrics_log.hpp"

#include <cmath>

#include "core/error.hpp"

namespace ddpx {
namespace {

nlohmann::json optional_number(std::optional<double> value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

}  // namespace

MetricsLog::MetricsLog(const std::string& path, bool append)
    : path_(path), out_(path, append ? std::ios::app : std::ios::trunc) {
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
  write(nlohmann::json{{"kind", "run"}, {"step", start_step}, {"model", model}, {"data", data}, {"classes", classes}});
}

void MetricsLog::step(int64_t step, std::optional<double> epoch, double lr, double loss,
                      std::optional<double> grad_norm, double images_per_s, double step_ms, double data_wait_ms) {
  write(nlohmann::json{{"kind", "step"}, {"step", step}, {"epoch", optional_number(epoch)}, {"lr", lr},
                       {"loss", loss}, {"grad_norm", optional_number(grad_norm)}, {"images_per_s", images_per_s},
                       {"step_ms", step_ms}, {"data_wait_ms", data_wait_ms}});
}

void MetricsLog::eval(int64_t step, std::optional<double> epoch, const EvalResult& result,
                      const std::string& weights) {
  write(nlohmann::json{{"kind", "eval"}, {"step", step}, {"epoch", optional_number(epoch)}, {"loss", result.loss},
                       {"top1", result.top1}, {"top5", result.top5}, {"count", result.count}, {"weights", weights}});
}

}  // namespace ddpx
