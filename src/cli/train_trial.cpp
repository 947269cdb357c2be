// `ddpx train` children and their throughput (see train_trial.hpp).
#include "cli/train_trial.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/child_process.hpp"
#include "core/error.hpp"
#include "ddp/comm_hook.hpp"
#include "model/vit_config.hpp"
#include "profile/step_record.hpp"

namespace ddpx::cli {

std::string TrainTrialResult::failure() const {
  if (status == 0 && steps_per_s) return "";
  const std::string tail = file_tail(log_path, 6);
  if (status != 0) return fmt::format("exit status {} (log {}):\n{}", status, log_path, tail);
  return fmt::format("no throughput in its output or report (log {}):\n{}", log_path, tail);
}

std::optional<double> parse_summary_steps_per_s(std::string_view output) {
  size_t at = 0;
  while ((at = output.find("summary:", at)) != std::string_view::npos) {
    const size_t line_end = std::min(output.find('\n', at), output.size());
    const std::string_view line = output.substr(at, line_end - at);
    const size_t unit = line.find(" steps/s");
    if (unit != std::string_view::npos) {
      size_t begin = unit;
      while (begin > 0 && (std::isdigit(static_cast<unsigned char>(line[begin - 1])) || line[begin - 1] == '.'))
        --begin;
      double value = 0;
      auto [end, ec] = std::from_chars(line.data() + begin, line.data() + unit, value);
      if (ec == std::errc() && end == line.data() + unit && value > 0) return value;
    }
    at = line_end;
  }
  return std::nullopt;
}

namespace {

std::optional<double> report_steps_per_s(const std::string& path) {
  if (path.empty() || !std::filesystem::exists(path)) return std::nullopt;
  const RunReport report = load_run_report(path);
  if (report.ranks.empty() || report.ranks.front().steps.empty()) return std::nullopt;
  double total_ms = 0;
  for (const StepRecord& step : report.ranks.front().steps) total_ms += step.phases.total_ms;
  if (total_ms <= 0) return std::nullopt;
  return static_cast<double>(report.ranks.front().steps.size()) * 1000.0 / total_ms;
}

}  // namespace

TrainTrialResult run_train_trial(const std::string& executable, const TrainTrial& trial) {
  std::vector<std::string> argv = {executable, "train"};
  argv.insert(argv.end(), trial.flags.begin(), trial.flags.end());
  if (!trial.report_path.empty()) {
    std::filesystem::remove(trial.report_path);  // a stale report must not stand in for this run
    argv.insert(argv.end(), {"--report", trial.report_path});
  }
  TrainTrialResult result;
  result.log_path = trial.log_path;
  result.status = run_child_process(argv, trial.env, trial.log_path);
  if (result.status != 0) return result;
  std::ifstream in(trial.log_path);
  std::stringstream text;
  text << in.rdbuf();
  result.steps_per_s = parse_summary_steps_per_s(text.str());
  if (!result.steps_per_s) result.steps_per_s = report_steps_per_s(trial.report_path);
  return result;
}

std::optional<std::string> find_flag_value(const std::vector<std::string>& flags, std::string_view name) {
  std::optional<std::string> value;
  const std::string with_equals = std::string(name) + "=";
  for (size_t i = 0; i < flags.size(); ++i) {
    if (flags[i] == name && i + 1 < flags.size()) value = flags[++i];
    else if (flags[i].rfind(with_equals, 0) == 0) value = flags[i].substr(with_equals.size());
  }
  return value;
}

bool has_flag(const std::vector<std::string>& flags, std::string_view name) {
  const std::string with_equals = std::string(name) + "=";
  for (const std::string& flag : flags)
    if (flag == name || flag.rfind(with_equals, 0) == 0) return true;
  return false;
}

void reject_owned_flags(const std::vector<std::string>& flags, const std::vector<std::string>& owned,
                        std::string_view command) {
  for (const std::string& entry : owned) {
    const size_t eq = entry.find('=');
    const std::string flag = entry.substr(0, eq);
    const std::string instead = eq == std::string::npos ? "" : entry.substr(eq + 1);
    DDPX_REQUIRE(!has_flag(flags, flag),
                 "`ddpx {}` sets {} for every run itself; {} after '--'",
                 command, flag,
                 instead.empty() ? fmt::format("remove {}", flag)
                                 : fmt::format("use `ddpx {} {}` instead of passing {}", command, instead, flag));
  }
}

namespace {
// Runs `parse` on every item; its error is prefixed with the list flag and the item.
template <typename Parse>
void require_each(const std::vector<std::string>& items, std::string_view flag, Parse parse) {
  for (const std::string& item : items) {
    try {
      (void)parse(item);
    } catch (const Error& e) {
      fail("{} {}: {}", flag, item, e.what());
    }
  }
}
}  // namespace

void require_valid_hooks(const std::vector<std::string>& hooks, std::string_view flag) {
  require_each(hooks, flag, [](const std::string& hook) { return make_comm_hook(hook); });
}

void require_valid_models(const std::vector<std::string>& models, std::string_view flag) {
  require_each(models, flag, [](const std::string& model) { return parse_model_spec(model); });
}

}  // namespace ddpx::cli
