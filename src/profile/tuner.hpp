// Tuner: run candidate DDP settings, keep the fastest, write it as a config file `ddpx train` reads.
// Guarantees:
//  - The default configuration is always measured (once, even if it is also a candidate), so the reported speedup
//    is winner steps/s over default steps/s from the same session. Each distinct candidate is measured once, in
//    the given order; on a tie the earlier one wins (the default first).
//  - run_trial must return steps/s > 0; anything else (or an exception) stops the tuning with ddpx::Error naming
//    the trial's flags.
//  - Config files: ".json" -> {"bucket-mb": 25, "first-bucket-mb": 1, "comm-hook": "bf16"}; any other extension
//    -> lines `bucket-mb = 25`, `first-bucket-mb = 1`, `comm-hook = "bf16"` (TOML/INI that CLI11's config reader
//    accepts), keys spelled as `ddpx train`'s long flags.
#pragma once
#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

namespace ddpx {

struct TrialConfig {
  double bucket_mb = 25;
  double first_bucket_mb = 1;
  std::string comm_hook = "allreduce";
  bool operator==(const TrialConfig&) const = default;

  // "--bucket-mb 25 --first-bucket-mb 1 --comm-hook allreduce"
  std::string flags() const;
};

struct TrialResult {
  TrialConfig config;
  double steps_per_s = 0;
};

struct TuneResult {
  std::vector<TrialResult> trials;  // the default first, then the candidates that differ from it
  TrialResult baseline;             // the default
  TrialResult best;
  double speedup = 1;               // best / baseline steps/s

  // A short report: one line per trial (fastest marked), then the winner and its speedup.
  std::string summary() const;
};

using TrialRunner = std::function<double(const TrialConfig&)>;

TuneResult tune(const TrialConfig& default_config, const std::vector<TrialConfig>& candidates,
                const TrialRunner& run_trial);

// Every combination, bucket sizes outermost; duplicates removed.
std::vector<TrialConfig> candidate_grid(const std::vector<double>& bucket_mb, const std::vector<double>& first_bucket_mb,
                                        const std::vector<std::string>& comm_hooks);

std::string trial_config_text(const TrialConfig& config);  // the key = value form
void write_trial_config(const TrialConfig& config, const std::string& path);
TrialConfig read_trial_config(const std::string& path);  // both forms; errors name the file, line and key

void to_json(nlohmann::json& j, const TrialConfig& config);
void from_json(const nlohmann::json& j, TrialConfig& config);

}  // namespace ddpx
