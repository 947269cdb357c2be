// Configuration search and config files (see tuner.hpp).
#include "tune/tuner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/error.hpp"
#include "io/output_file.hpp"
#include "io/posix_file.hpp"
#include "core/json_parse.hpp"
#include "report/json_fields.hpp"

namespace ddpx {

using nlohmann::json;

std::string TrialConfig::flags() const {
  return fmt::format("--bucket-mb {} --first-bucket-mb {} --comm-hook {}", bucket_mb, first_bucket_mb, comm_hook);
}

namespace {

double measure(const TrialConfig& config, const TrialRunner& run_trial) {
  double steps_per_s = 0;
  try {
    steps_per_s = run_trial(config);
  } catch (const std::exception& e) {
    fail("tune: the trial with {} failed: {}", config.flags(), e.what());
  }
  DDPX_REQUIRE(std::isfinite(steps_per_s) && steps_per_s > 0,
               "tune: the trial with {} returned {} steps/s; a trial must report a positive throughput",
               config.flags(), steps_per_s);
  return steps_per_s;
}

void validate(const TrialConfig& c, const std::string& where) {
  DDPX_REQUIRE(c.bucket_mb > 0 && c.first_bucket_mb > 0,
               "{}: bucket-mb ({}) and first-bucket-mb ({}) must be positive", where, c.bucket_mb, c.first_bucket_mb);
  DDPX_REQUIRE(!c.comm_hook.empty(), "{}: comm-hook must not be empty (e.g. allreduce, bf16, powersgd:4)", where);
}

}  // namespace

TuneResult tune(const TrialConfig& default_config, const std::vector<TrialConfig>& candidates,
                const TrialRunner& run_trial, const TuneOptions& options) {
  DDPX_REQUIRE(static_cast<bool>(run_trial), "tune: no trial runner given");
  DDPX_REQUIRE(options.repeats >= 1 && options.repeats <= 1000, "tune: --repeats must be 1 to 1000, got {}",
               options.repeats);
  validate(default_config, "tune: the default configuration");
  const auto key = [&](const TrialConfig& c) { return options.same_run ? options.same_run(c) : c.flags(); };
  TuneResult result;
  result.repeats = options.repeats;
  std::vector<std::string> keys;
  const auto add = [&](const TrialConfig& c) {
    const std::string k = key(c);
    const auto at = std::find(keys.begin(), keys.end(), k);
    if (at == keys.end()) {
      keys.push_back(k);
      result.trials.push_back(TrialResult{c, {}, {}, 0, 0, 0});
      return;
    }
    TrialResult& trial = result.trials[static_cast<size_t>(at - keys.begin())];
    if (!(trial.config == c) &&
        std::find(trial.same_run.begin(), trial.same_run.end(), c) == trial.same_run.end())
      trial.same_run.push_back(c);
  };
  add(default_config);
  for (const TrialConfig& candidate : candidates) {
    validate(candidate, fmt::format("tune: candidate {}", candidate.flags()));
    add(candidate);
  }
  for (int round = 0; round < options.repeats; ++round)
    for (TrialResult& trial : result.trials) trial.samples.push_back(measure(trial.config, run_trial));
  for (TrialResult& trial : result.trials) {
    std::vector<double> sorted = trial.samples;
    std::sort(sorted.begin(), sorted.end());
    const size_t n = sorted.size();
    trial.steps_per_s = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    trial.min_steps_per_s = sorted.front();
    trial.max_steps_per_s = sorted.back();
  }
  result.baseline = result.trials.front();
  result.best = result.baseline;
  for (const TrialResult& trial : result.trials) {
    const bool beyond_spread = trial.min_steps_per_s > result.baseline.max_steps_per_s;
    if (beyond_spread && trial.steps_per_s > result.best.steps_per_s) result.best = trial;
  }
  result.gain_beyond_spread = !(result.best.config == result.baseline.config);
  result.speedup = result.best.steps_per_s / result.baseline.steps_per_s;
  return result;
}

std::string TuneResult::summary() const {
  std::string out = fmt::format("# {:>10}  {:>21}  {}\n", "steps/s", repeats > 1 ? fmt::format("min..max of {} runs", repeats) : "",
                                "configuration (median of the runs)");
  for (const TrialResult& t : trials) {
    std::string also;
    for (const TrialConfig& c : t.same_run) also += (also.empty() ? "  (same run as: " : "; ") + c.flags();
    if (!also.empty()) also += ")";
    out += fmt::format("  {:>10.3f}  {:>21}  {}{}{}{}\n", t.steps_per_s,
                       repeats > 1 ? fmt::format("{:.3f}..{:.3f}", t.min_steps_per_s, t.max_steps_per_s) : "",
                       t.config.flags(), t.config == baseline.config ? "  (default)" : "",
                       t.config == best.config && gain_beyond_spread ? "  <- fastest beyond the spread" : "", also);
  }
  if (gain_beyond_spread) {
    out += fmt::format("# best: {} at {:.3f} steps/s (median), {:.2f}x the default ({:.3f}); its slowest run ({:.3f}) "
                       "beat the default's fastest ({:.3f})\n",
                       best.config.flags(), best.steps_per_s, speedup, baseline.steps_per_s, best.min_steps_per_s,
                       baseline.max_steps_per_s);
  } else {
    const auto fastest = std::max_element(trials.begin(), trials.end(), [](const TrialResult& a, const TrialResult& b) {
      return a.steps_per_s < b.steps_per_s;
    });
    out += fmt::format("# best: the default ({}): no configuration was faster beyond the spread of {} run{} each",
                       baseline.config.flags(), repeats, repeats == 1 ? "" : "s");
    if (fastest != trials.end() && !(fastest->config == baseline.config))
      out += fmt::format(" (the fastest median, {} at {:.3f} against {:.3f}, is within the noise)",
                         fastest->config.flags(), fastest->steps_per_s, baseline.steps_per_s);
    out += "\n";
  }
  return out;
}

std::vector<TrialConfig> candidate_grid(const std::vector<double>& bucket_mb, const std::vector<double>& first_bucket_mb,
                                        const std::vector<std::string>& comm_hooks) {
  std::vector<TrialConfig> out;
  for (double bucket : bucket_mb)
    for (double first : first_bucket_mb)
      for (const std::string& hook : comm_hooks) {
        TrialConfig c{bucket, first, hook};
        validate(c, fmt::format("tune: candidate {}", c.flags()));
        if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
      }
  return out;
}

std::string trial_config_text(const TrialConfig& c) {
  return fmt::format("# ddpx train settings chosen by `ddpx tune`\nbucket-mb = {}\nfirst-bucket-mb = {}\n"
                     "comm-hook = \"{}\"\n",
                     c.bucket_mb, c.first_bucket_mb, c.comm_hook);
}

namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string trim(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t\r") - begin + 1);
}

double parse_number(const std::string& value, const std::string& path, int line, const std::string& key) {
  try {
    size_t used = 0;
    const double number = std::stod(value, &used);
    if (used == value.size()) return number;
  } catch (const std::exception&) {
  }
  fail("config '{}' line {}: {} = {} is not a number", path, line, key, value);
}

}  // namespace

void write_trial_config(const TrialConfig& config, const std::string& path) {
  write_output_text(path, "--out", ends_with(path, ".json") ? json(config).dump(2) + "\n" : trial_config_text(config));
}

TrialConfig read_trial_config(const std::string& path) {
  std::istringstream in(read_small_file(path, uint64_t{64} << 20, "config"));
  TrialConfig config;
  if (ends_with(path, ".json")) {
    try {
      config = parse_json(in, "the file").get<TrialConfig>();
    } catch (const json::exception& e) {
      fail("config '{}' is not valid JSON: {}", path, e.what());
    } catch (const Error& e) {
      fail("config '{}': {}", path, e.what());
    }
  } else {
    std::string text;
    int line_number = 0;
    while (std::getline(in, text)) {
      ++line_number;
      const std::string line = trim(text.substr(0, text.find('#')));
      if (line.empty() || line.front() == '[') continue;
      const size_t eq = line.find('=');
      DDPX_REQUIRE(eq != std::string::npos, "config '{}' line {}: expected key = value, got '{}'", path, line_number,
                   line);
      const std::string key = trim(line.substr(0, eq));
      std::string value = trim(line.substr(eq + 1));
      if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
      if (key == "bucket-mb") {
        config.bucket_mb = parse_number(value, path, line_number, key);
      } else if (key == "first-bucket-mb") {
        config.first_bucket_mb = parse_number(value, path, line_number, key);
      } else if (key == "comm-hook") {
        config.comm_hook = value;
      } else {
        fail("config '{}' line {}: unknown key '{}'; expected bucket-mb, first-bucket-mb or comm-hook", path,
             line_number, key);
      }
    }
  }
  validate(config, fmt::format("config '{}'", path));
  return config;
}

void to_json(json& j, const TrialConfig& c) {
  j = json{{"bucket-mb", c.bucket_mb}, {"first-bucket-mb", c.first_bucket_mb}, {"comm-hook", c.comm_hook}};
}

void from_json(const json& j, TrialConfig& c) {
  json_fields::optional(j, "tuned config", "bucket-mb", c.bucket_mb);
  json_fields::optional(j, "tuned config", "first-bucket-mb", c.first_bucket_mb);
  json_fields::optional(j, "tuned config", "comm-hook", c.comm_hook);
  for (const auto& [key, value] : j.items())
    DDPX_REQUIRE(key == "bucket-mb" || key == "first-bucket-mb" || key == "comm-hook",
                 "tuned config: unknown key '{}'; expected bucket-mb, first-bucket-mb or comm-hook", key);
}

}  // namespace ddpx
