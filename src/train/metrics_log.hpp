// MetricsLog: --metrics FILE, one JSON object per line, written and flushed as the run goes (rank 0), so a crashed
// or running job's curves can be read at any time (`ddpx report --metrics FILE` draws them, --csv tabulates them).
// Lines: {"kind": "run", "step" (the step it starts after: 0, or the resumed checkpoint's), "model", "data",
// "classes" (the data's class names, label = index; [] where it names none)} when a run starts or resumes;
// {"kind": "step", "step", "epoch", "lr", "loss", "grad_norm" (with --clip-grad-norm), "images_per_s", "step_ms"
// (mean wall time per step since the previous step line), "data_wait_ms" (mean time per step the step waited for
// its batch, same interval)} at every progress line, and {"kind": "eval", "step", "epoch", "loss", "top1", "top5",
// "count", "weights": "model" | "ema"} at every evaluation; "epoch" is the fraction of the training set seen (steps x
// global batch / its size), null when the source has no size. Every line also has "time" (wall-clock Unix seconds,
// to the millisecond) and "elapsed" (seconds since this attempt's "run" line: a resumed run starts again from 0).
// Guarantees: each line is complete when flushed (a reader never sees half an object); the file is truncated at
// the start of a run and a resumed run appends (its steps continue); a write error is a ddpx::Error naming --metrics.
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
  MetricsLog(const std::string& path, bool append);
  void run(int64_t start_step, const std::string& model, const std::string& data,
           const std::vector<std::string>& classes);
  void step(int64_t step, std::optional<double> epoch, double lr, double loss, std::optional<double> grad_norm,
            double images_per_s, double step_ms, double data_wait_ms);
  void eval(int64_t step, std::optional<double> epoch, const EvalResult& result, const std::string& weights);

 private:
  void write(nlohmann::json line);  // adds "time" and "elapsed"
  std::string path_;
  std::chrono::steady_clock::time_point opened_ = std::chrono::steady_clock::now();
  std::ofstream out_;
};

}  // namespace ddpx
