// One `ddpx train` run as a child process, and the throughput it reports: the measuring unit of `ddpx bench`
// and `ddpx tune`.
// Guarantees:
//  - The child is `<executable> train <flags...>`, with `env` added to this process's environment, its whole
//    output in log_path. steps/s is read from the run report it writes to report_path (required): the report's
//    throughput (train's summary figure), or for reports without one rank 0's measured steps over the sum of their
//    wall-clock times. The human-readable log is never parsed.
//  - A run that exits non-zero, or reports no positive throughput, gives no steps/s; the log stays for the user.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddpx::cli {

struct TrainTrial {
  std::vector<std::string> flags;  // everything after "train"
  std::vector<std::string> env;    // NAME=value
  std::string log_path;
  std::string report_path;         // passed as --report; the throughput comes from it
};

struct TrainTrialResult {
  int status = 0;
  std::optional<double> steps_per_s;
  std::optional<double> images_per_s;  // from the report's throughput, when it has one
  std::string device_name;             // rank 0's device as the report names it ("NVIDIA H200", "cpu")
  std::string log_path;
  // "exit status 2: <last lines of the log>" when it failed, "" otherwise.
  std::string failure() const;
};

TrainTrialResult run_train_trial(const std::string& executable, const TrainTrial& trial);

// The value of --name in a flag list ("--name V" or "--name=V"; the last one wins, as in train); nullopt if absent.
std::optional<std::string> find_flag_value(const std::vector<std::string>& flags, std::string_view name);
bool has_flag(const std::vector<std::string>& flags, std::string_view name);

// Throws ddpx::Error when `flags` (the train flags after "--") contain one of `owned`, naming the flag and the
// option of `command` that sets it instead (owned entries: "--flag=--command-option").
void reject_owned_flags(const std::vector<std::string>& flags, const std::vector<std::string>& owned,
                        std::string_view command);

// Before any trial runs: every item of a --hooks or --models list is a value train accepts. Errors name the list
// flag and the item (so a typo never waits for the trials before it, nor passes a --dry-run).
void require_valid_hooks(const std::vector<std::string>& hooks, std::string_view flag);
void require_valid_models(const std::vector<std::string>& models, std::string_view flag);

}  // namespace ddpx::cli
