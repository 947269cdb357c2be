// Tuner: run candidate DDP settings, keep the fastest, write it as a config file `ddpx train` reads.
// Guarantees:
//  - The default configuration is always measured, so the reported speedup is winner over default from the same
//    session. Configurations that make the same run (TuneOptions::same_run: e.g. the same bucket plan and hook)
//    are one trial, listed with every configuration it stands for; the default's trial comes first.
//  - Every trial runs TuneOptions::repeats times, in rounds (each round runs every trial once, in order, so drift
//    on the machine spreads over all of them); a trial's figure is the median of its runs, its spread min..max.
//  - A trial wins only when it is faster beyond the spread: its slowest run beats the default's fastest. Otherwise
//    the default is the answer (gain_beyond_spread false), whatever the medians say. Among the winners the
//    fastest median wins; on a tie the earlier one.
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
  TrialConfig config;                    // the one that runs
  std::vector<TrialConfig> same_run;     // other configurations that make the same run (folded into this trial)
  std::vector<double> samples;           // steps/s of each run, in run order
  double steps_per_s = 0;                // the median of samples
  double min_steps_per_s = 0, max_steps_per_s = 0;
};

struct TuneResult {
  std::vector<TrialResult> trials;  // the default's first, then the other distinct runs
  TrialResult baseline;             // the default's
  TrialResult best;                 // the winner beyond the spread, else the default's
  double speedup = 1;               // best / baseline median steps/s
  bool gain_beyond_spread = false;  // best is not the default: its slowest run beat the default's fastest
  int repeats = 1;

  // A short report: one line per trial (median, spread, the configurations it stands for; the answer marked),
  // then the answer and what it gains, or that nothing beat the default beyond the spread.
  std::string summary() const;
};

using TrialRunner = std::function<double(const TrialConfig&)>;

struct TuneOptions {
  int repeats = 3;  // runs per trial, >= 1
  // A key naming the run a configuration makes; equal keys are one trial. Empty function: equal configs only.
  std::function<std::string(const TrialConfig&)> same_run;
};

TuneResult tune(const TrialConfig& default_config, const std::vector<TrialConfig>& candidates,
                const TrialRunner& run_trial, const TuneOptions& options = {});

// Every combination, bucket sizes outermost; duplicates removed.
std::vector<TrialConfig> candidate_grid(const std::vector<double>& bucket_mb, const std::vector<double>& first_bucket_mb,
                                        const std::vector<std::string>& comm_hooks);

std::string trial_config_text(const TrialConfig& config);  // the key = value form
void write_trial_config(const TrialConfig& config, const std::string& path);
TrialConfig read_trial_config(const std::string& path);  // both forms; errors name the file, line and key

void to_json(nlohmann::json& j, const TrialConfig& config);
void from_json(const nlohmann::json& j, TrialConfig& config);

}  // namespace ddpx
