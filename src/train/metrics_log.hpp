// MetricsLog: --metrics FILE, one JSON object per line, written and flushed as the run goes (rank 0), so a crashed
// or running job's curves can be read at any time (`ddpx report --metrics FILE` draws them, --csv tabulates them).
// Lines: {"kind": "run", "step" (the step it starts after: 0, or the resumed checkpoint's), "model", "data",
// "classes" (the data's class names, label = index; [] where it names none)} when a run starts or resumes;
// {"kind": "step", "step", "epoch", "lr", "loss", "grad_norm" (with --clip-grad-norm), "images_per_s", "step_ms"
// (mean wall time per step since the previous step line), "data_wait_ms" (mean time per step the step waited for
// its batch, same interval)} at every progress line, and {"kind": "eval", "step", "epoch", "loss", "top1", "top5",
// "count", "weights": "model" | "ema"} at every evaluation; "epoch" is the fraction of the training set seen (steps x
// global batch / its size), null when the source has no size; {"kind": "end", "step", "reason": "finished"} when a
// run reaches its last step. Every line also has "time" (wall-clock Unix seconds,
// to the millisecond) and "elapsed" (seconds since this attempt's "run" line: a resumed run starts again from 0).
// One file across attempts: a resumed run keeps the lines up to the step it resumes from and drops what the stopped
// attempt wrote after it (it runs those steps again), so every step is in the file once; its "run" line says how far
// the stopped attempt had got ("previous_attempt_reached"). An attempt without an "end" line stopped before its end
// (killed, interrupted or failed).
// Guarantees: each line is complete when flushed (a reader never sees half an object); the file is truncated at
// the start of a run (resumed_at 0); a write error is a ddpx::Error naming --metrics.
#pragma once
#include <chrono>
#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/evaluation.hpp"

namespace ddpx {

class MetricsLog {
 public:
  // resumed_at: the step this run resumes from (0: a fresh start).
  MetricsLog(const std::string& path, int64_t resumed_at);
  void run(int64_t start_step, const std::string& model, const std::string& data,
           const std::vector<std::string>& classes);
  void step(int64_t step, std::optional<double> epoch, double lr, double loss, std::optional<double> grad_norm,
            double images_per_s, double step_ms, double data_wait_ms);
  void eval(int64_t step, std::optional<double> epoch, const EvalResult& result, const std::string& weights);
  void end(int64_t step, const std::string& reason);

 private:
  void write(nlohmann::json line);  // adds "time" and "elapsed"
  std::string path_;
  std::chrono::steady_clock::time_point opened_ = std::chrono::steady_clock::now();
  int64_t previous_reached_ = 0;  // the last step the file held when this run resumed
  std::ofstream out_;
};

}  // namespace ddpx
