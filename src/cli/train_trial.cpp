// `ddpx train` children and their throughput (see train_trial.hpp).
#include "cli/train_trial.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "cli/child_process.hpp"
#include "comm_plan/hook_catalogue.hpp"
#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "model/model_registry.hpp"
#include "report/step_record.hpp"

namespace ddpx::cli {

std::string TrainTrialResult::failure() const {
  if (status == 0 && steps_per_s) return "";
  const std::string tail = file_tail(log_path, 6);
  if (status != 0) return fmt::format("exit status {} (log {}):\n{}", status, log_path, tail);
  return fmt::format("no throughput in its run report (log {}):\n{}", log_path, tail);
}

namespace {

// What the trial's run report says of its throughput (steps/s: the summary's figure, recorded as throughput, see
// report/step_record.hpp; images/s; rank 0's device), read once; nothing when the child wrote no report or no
// positive steps/s. A damaged report is an error naming it.
void read_trial_report(const std::string& path, TrainTrialResult& result) {
  if (!std::filesystem::exists(path)) return;
  const RunReport report = load_run_report(path);
  const double steps_per_s = report_steps_per_s(report);
  if (!(steps_per_s > 0)) return;
  result.steps_per_s = steps_per_s;
  if (report.throughput && report.throughput->images_per_s > 0) result.images_per_s = report.throughput->images_per_s;
  if (!report.ranks.empty()) result.device_name = report.ranks.front().info.device_name;
}

}  // namespace

TrainTrialResult run_train_trial(const std::string& executable, const TrainTrial& trial) {
  DDPX_INTERNAL_ASSERT(!trial.report_path.empty(), "run_train_trial: a trial needs a report path (its throughput "
                       "is read from the run report); log {}", trial.log_path);
  std::vector<std::string> argv = {executable, "train"};
  argv.insert(argv.end(), trial.flags.begin(), trial.flags.end());
  std::filesystem::remove(trial.report_path);  // a stale report must not stand in for this run
  argv.insert(argv.end(), {"--report", trial.report_path});
  TrainTrialResult result;
  result.log_path = trial.log_path;
  result.status = run_child_process(argv, trial.env, trial.log_path);
  if (result.status != 0) return result;
  read_trial_report(trial.report_path, result);
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
  require_each(hooks, flag, [](const std::string& hook) { return parse_comm_hook_spec(hook); });
}

void require_valid_models(const std::vector<std::string>& models, std::string_view flag) {
  require_each(models, flag, [](const std::string& model) { return make_model(model); });
}

}  // namespace ddpx::cli
