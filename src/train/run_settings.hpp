// RunSettings: a run describes itself once (Note [One table of the run's settings], docs/design.md). One table,
// built once before the first step from TrainOptions, the model's layout, the step the run starts from, the hook,
// the bucket plan and the job (ranks, backend, reducer), has a row per setting: its name as the user knows it, its
// value as text, and one column per place it goes:
//  - agreed: compared across ranks before the first step, in one collective (dist/agreement.hpp). A setting is
//    agreed when a difference between ranks would change the math (model, precision, batch, accumulation,
//    optimizer and its hyperparameters, the learning-rate schedule, the recipe's regularization, seed, data, its
//    files and class names, RandAugment, hook, bucket plan) or the schedule of collectives and outputs (steps, the
//    step a resume starts at, --warmup and --calibrate-steps, evaluation, CUDA graphs, overlap, --save,
//    --checkpoint-dir and how often checkpoints are written, the watchdog's timeout, --report and --trace, which
//    every rank records for rank 0). Settings that change neither (workers, prefetch, threads, --log-every, output
//    paths themselves) are not, so ranks may differ in them; nor are the facts every rank has by construction
//    (ranks, backend, reducer) and the command line.
//  - report: a JSON merge patch of the run report's config (RunConfig's JSON, report/step_record.hpp); null: not
//    recorded there.
//  - checkpoint: a JSON merge patch of a checkpoint's metadata (io/checkpoint.hpp), null: not recorded there. Its
//    "extra" object holds the trainer's fields, which this table feeds (checkpoint_extra(), written by
//    train/checkpointing.cpp and checked by it on --resume); "model", "optimizer" and "optimizer_options" are
//    io/checkpoint's own format fields, written there from the layout and the optimizer, and stated here so that
//    one table says what a checkpoint records.
// Rows in some columns and not others are the places the three consumers differ; they are visible here on purpose
// (the Note lists them, and which look like gaps).
// Guarantees: every name appears once; agreed() is the agreed rows in table order (the start-up agreement's table:
// same names, same order, same values, so its error naming a setting and a rank is unchanged); report_config()
// holds every report row's patch, and every RunConfig field but the recorder's own (the per-rank resolved
// --workers and --weight-grads, the build and start stamps, the gradient tensors: train/run_report.hpp);
// checkpoint_extra() holds every checkpoint row's "extra" patch and nothing else. Values are written exactly
// (doubles in their shortest round-trip form); a data file is represented by its size and a fingerprint of its
// first and last 64 KiB (cheap on large files: files that differ only in the middle pass) read without blocking on
// FIFOs; a file that cannot be read is represented by that fact, so its rank disagrees with the others instead of
// failing alone.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dist/agreement.hpp"
#include "model/flat_layout.hpp"
#include "report/step_record.hpp"
#include "train/train_options.hpp"

namespace ddpx {

struct RunSetting {
  std::string name;           // the flag as the user knows it ("--lr"), or what the setting is
  std::string text;           // its value as text, as the user would write it (what ranks compare)
  bool agreed = false;        // compared across ranks at start-up
  nlohmann::json report;      // merge patch of the run report's config JSON; null: not in the report
  nlohmann::json checkpoint;  // merge patch of a checkpoint's metadata; null: not in checkpoints
};

// What the table is built from beyond TrainOptions and the layout.
struct RunFacts {
  int64_t start_step = 0;             // optimizer steps already done (--resume)
  std::string hook_spec;              // the canonical --comm-hook (CommHookSpec::text())
  std::string bucket_plan_signature;  // BucketPlan::signature() of --bucket-mb/--first-bucket-mb over the layout
  int world = 1;                      // ranks in the job
  std::string backend;                // the communicator's backend_name() ("gloo", "mpi", ...); "" without one
  bool reducer = false;               // a reducer is attached (a communicator: --ddp or several ranks)
  // The step each attempt of the run started from, this one last ({0} for a fresh run): the checkpoint keeps them,
  // so the report of the attempt that finishes names every attempt (run_attempts()).
  std::vector<int64_t> attempt_starts = {0};
};

class RunSettings {
 public:
  RunSettings(const TrainOptions& options, const FlatLayout& layout, const RunFacts& facts);
  const std::vector<RunSetting>& rows() const { return rows_; }
  std::vector<AgreedSetting> agreed() const;
  // A RunConfig holding the report rows (the recorder adds its own fields).
  RunConfig report_config() const;
  // The checkpoint's "extra" object of the checkpoint rows (the trainer adds the weight average's update count).
  nlohmann::json checkpoint_extra() const;

 private:
  std::vector<RunSetting> rows_;
};

// The run's attempts from their start steps (the last this attempt's) and the run's last step: attempt k ran from
// starts[k] to starts[k + 1] (where the next resumed from its checkpoint), the last to end_step, "finished".
std::vector<RunAttempt> run_attempts(const std::vector<int64_t>& starts, int64_t end_step);
// The start steps of a resumed run: those the checkpoint recorded ({0} when it recorded none) and this attempt's.
std::vector<int64_t> attempt_starts_after(std::vector<int64_t> recorded, int64_t start_step);

// "1048704 bytes, fingerprint 0123456789abcdef"; "missing or unreadable: <reason>" when it cannot be read.
std::string file_fingerprint(const std::string& path);

}  // namespace ddpx
