// `ddpx tune`: short `ddpx train` trials over bucket size, first-bucket size and hook (PowerSGD ranks only where
// --allow-lossy lists them), the fastest written as a config file that `ddpx train --config FILE` reads.
// Guarantees: the default (--bucket-mb 25 --first-bucket-mb 1 --comm-hook allreduce) is always measured in the
// same session, so the printed speedup compares like with like (tune/tuner.hpp); every trial runs the same
// train flags (those after "--") with the trial's three flags last; a failed trial stops the tuning with its exit
// status and the end of its log; the written file is read back and must give the winner. Trial logs and reports
// go to a folder next to --out (FILE.trials/), kept for inspection.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "cli/arg_lists.hpp"
#include "cli/child_process.hpp"
#include "cli/commands.hpp"
#include "predict/prediction_output.hpp"
#include "cli/launch.hpp"
#include "cli/output_dir.hpp"
#include "cli/train_trial.hpp"
#include "comm_plan/bucket_plan.hpp"
#include "comm_plan/hook_catalogue.hpp"
#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "model/model_registry.hpp"
#include "tune/tuner.hpp"
#include "train/train_options.hpp"

namespace ddpx::cli {
namespace {

// Whether a --hooks/--allow-lossy entry names a lossy hook, as the hook catalogue says (an unknown name is
// require_valid_hooks's to refuse).
bool lossy_hook(const std::string& text) {
  const CommHookEntry* entry = find_comm_hook(text);
  return entry && entry->lossy;
}

namespace fs = std::filesystem;

struct TuneFlags {
  int trial_steps = 20;
  int repeats = 3;
  int warmup = -1;  // -1: a quarter of the trial, at most 5
  std::string bucket_mb = "5,25,100";
  std::string first_bucket_mb = "1,5";
  std::string hooks = "allreduce,bf16";
  std::string allow_lossy;
  std::string out;
  std::string executable;  // "" = this ddpx
  std::vector<std::string> train_flags;
};

int run_tune(const TuneFlags& f) {
  require_single_process("tune");  // every trial starts its own ranks
  DDPX_REQUIRE(!f.out.empty(), "--out is required: the config file to write (e.g. --out best.cfg)");
  DDPX_REQUIRE(f.trial_steps >= 2, "--trials-steps {}: at least 2 steps per trial", f.trial_steps);
  const int warmup = f.warmup >= 0 ? f.warmup : std::min(5, f.trial_steps / 4);
  DDPX_REQUIRE(warmup < f.trial_steps, "--warmup {} must be smaller than --trials-steps {}", warmup, f.trial_steps);
  reject_owned_flags(f.train_flags,
                     {"--bucket-mb=--bucket-mb", "--first-bucket-mb=--first-bucket-mb", "--comm-hook=--hooks",
                      "--steps=--trials-steps", "--warmup=--warmup", "--report", "--trace"},
                     "tune");
  const std::optional<std::string> nproc = find_flag_value(f.train_flags, "--nproc-per-node");
  DDPX_REQUIRE(has_flag(f.train_flags, "--ddp") || (nproc && *nproc != "0" && *nproc != "1"),
               "the train flags after '--' run one process without DDP, where bucket sizes and hooks change nothing; "
               "add --nproc-per-node N (N >= 2), or --ddp to tune the reducer on one rank");

  std::vector<std::string> hooks = split_list(f.hooks, "--hooks");
  for (const std::string& hook : hooks)
    DDPX_REQUIRE(!lossy_hook(hook),
                 "--hooks {}: PowerSGD changes what training computes (low-rank gradients); list it under "
                 "--allow-lossy to let tune pick it", hook);
  if (!f.allow_lossy.empty())
    for (const std::string& hook : split_list(f.allow_lossy, "--allow-lossy")) {
      DDPX_REQUIRE(lossy_hook(hook) && hook.find(':') != std::string::npos,
                   "--allow-lossy {}: expected powersgd:R entries (e.g. powersgd:4)", hook);
      hooks.push_back(hook);
    }
  require_valid_hooks(hooks, "--hooks/--allow-lossy");
  const std::vector<TrialConfig> candidates =
      candidate_grid(parse_number_list(f.bucket_mb, "--bucket-mb"),
                     parse_number_list(f.first_bucket_mb, "--first-bucket-mb"), hooks);

  // Two configurations make the same run when they cut the model's gradients into the same buckets and use the
  // same hook (--bucket-mb 25 and 100 on a model smaller than 25 MB; anything under --no-overlap).
  const std::string model = find_flag_value(f.train_flags, "--model").value_or(TrainOptions{}.model);
  std::vector<GradTensor> tensors;
  const std::unique_ptr<Model> layout_model = make_model(model);
  for (const TensorSlot& slot : layout_model->layout().tensors())
    tensors.push_back(GradTensor{slot.name, slot.offset, slot.numel, slot.shape});
  const bool no_overlap = has_flag(f.train_flags, "--no-overlap");
  TuneOptions options;
  options.repeats = f.repeats;
  options.same_run = [tensors, no_overlap](const TrialConfig& c) {
    const BucketPlanOptions plan = BucketPlanOptions::from_mb(c.bucket_mb, c.first_bucket_mb);
    std::string buckets = no_overlap ? "after backward" : "";  // the buckets' spans, not the caps that cut them
    if (!no_overlap) {
      const BucketPlan cut(tensors, plan);
      for (const Bucket& b : cut.buckets()) buckets += fmt::format("{}-{} ", b.begin, b.end);
    }
    return buckets + "| " + c.comm_hook;
  };

  const fs::path trials_dir = fs::path(f.out).string() + ".trials";
  create_output_dir(trials_dir, "--out (its trial logs go to OUT.trials)");
  const std::string executable = f.executable.empty() ? this_executable() : f.executable;
  std::vector<std::string> runs = {options.same_run(TrialConfig{})};
  for (const TrialConfig& c : candidates)
    if (std::find(runs.begin(), runs.end(), options.same_run(c)) == runs.end()) runs.push_back(options.same_run(c));
  const size_t others = runs.size() - 1;
  const size_t total = runs.size() * static_cast<size_t>(f.repeats);  // the default's run, then the others
  int trial_number = 0;
  const TrialRunner run_trial = [&](const TrialConfig& config) {
    ++trial_number;
    TrainTrial trial;
    trial.flags = f.train_flags;
    trial.flags.insert(trial.flags.end(),
                       {"--steps", std::to_string(f.trial_steps), "--warmup", std::to_string(warmup), "--log-every",
                        std::to_string(f.trial_steps), "--bucket-mb", fmt::format("{}", config.bucket_mb),
                        "--first-bucket-mb", fmt::format("{}", config.first_bucket_mb), "--comm-hook",
                        config.comm_hook});
    const std::string stem = fmt::format("trial-{:02}", trial_number);
    trial.log_path = (trials_dir / (stem + ".log")).string();
    trial.report_path = (trials_dir / (stem + ".json")).string();
    fmt::print("trial {}/{}: {} ... ", trial_number, total, config.flags());
    std::fflush(stdout);
    const TrainTrialResult result = run_train_trial(executable, trial);
    if (!result.steps_per_s) {
      fmt::print("failed\n");
      fail("{}", result.failure());
    }
    fmt::print("{:.3f} steps/s\n", *result.steps_per_s);
    std::fflush(stdout);
    return *result.steps_per_s;
  };
  fmt::print("# ddpx tune: the default and {} other distinct run(s) of {} configuration(s), {} time(s) each, {} steps "
             "each ({} warm-up); logs in {}\n",
             others, candidates.size(), f.repeats, f.trial_steps, warmup, trials_dir.string());
  const TuneResult result = tune(TrialConfig{}, candidates, run_trial, options);
  fmt::print("\n{}", result.summary());

  write_trial_config(result.best.config, f.out);
  DDPX_INTERNAL_ASSERT(read_trial_config(f.out) == result.best.config,
                       "'{}' does not read back as the winning configuration {}", f.out, result.best.config.flags());
  std::string extra;
  for (const std::string& flag : f.train_flags) extra += " " + flag;
  fmt::print("wrote {}: {}\nuse it with: ddpx train --config {}{}\n", f.out, result.best.config.flags(), f.out, extra);
  if (result.gain_beyond_spread)
    fmt::print("speedup over the default: {:.2f}x ({:.3f} -> {:.3f} steps/s, medians of {} runs)\n", result.speedup,
               result.baseline.steps_per_s, result.best.steps_per_s, f.repeats);
  else
    fmt::print("no speedup beyond the spread of {} runs: the file holds the default\n", f.repeats);
  if (result.gain_beyond_spread && comm_hook_compresses(parse_comm_hook_spec(result.best.config.comm_hook)))
    fmt::print("note: the winner's hook is lossy: {}\n", predict::lossy_hook_warning());
  return 0;
}

}  // namespace

Command add_tune_command(CLI::App* cmd) {
  const auto f = command_flags<TuneFlags>(cmd, HelpDefaults::shown);
  cmd->add_option("--trials-steps", f->trial_steps, "training steps per trial, warm-up included");
  cmd->add_option("--repeats", f->repeats,
                  "runs of each distinct configuration, in rounds; a trial wins only when its slowest run beats the "
                  "default's fastest");
  cmd->add_option("--warmup", f->warmup, "steps of each trial excluded from steps/s (-1: a quarter, at most 5)");
  cmd->add_option("--bucket-mb", f->bucket_mb, "comma list of bucket caps in MB to try");
  cmd->add_option("--first-bucket-mb", f->first_bucket_mb, "comma list of first-bucket caps in MB to try");
  cmd->add_option("--hooks", f->hooks, "comma list of lossless-enough hooks to try: allreduce, fp16, bf16");
  cmd->add_option("--allow-lossy", f->allow_lossy, "PowerSGD ranks tune may pick too, e.g. powersgd:1,powersgd:4");
  cmd->add_option("--out", f->out, "config file to write (key = value; .json for JSON)")->required();
  cmd->add_option("--ddpx", f->executable, "program the trials run as `PROGRAM train ...` (default: this ddpx)");
  cmd->add_option("train_flags", f->train_flags, "flags for every trial's `ddpx train`, after '--'");
  return command_running(cmd, f, run_tune);
}

}  // namespace ddpx::cli
