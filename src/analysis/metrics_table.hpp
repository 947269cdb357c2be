// A --metrics file (train/metrics_log.hpp's JSON Lines) read back as rows, for the curves (analysis/curve_chart.hpp)
// and for spreadsheets (`ddpx report --metrics m.jsonl --csv out.csv`).
// Guarantees:
//  - read_metrics_file() keeps every "step" and "eval" line in file order, numbered by attempt: 1 for the lines
//    after the first "run" line (or before any), +1 at each later "run" line (a resumed run appends one), so the
//    lines of every attempt of a resumed run are kept and told apart; a line that is not a metrics object is a
//    ddpx::Error naming the file and the line number. Fields a line lacks (an older file: no "time") are NaN.
//  - metrics_csv() is RFC 4180 CSV: a header row, then one row per line with the columns kMetricsCsvColumns in that
//    order; a number is written so it reads back to the same double, a missing or null value is an empty cell.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace ddpx {

struct MetricsRow {
  std::string kind;  // "step" or "eval"
  int attempt = 1;
  int64_t step = 0;
  double epoch = NAN, time = NAN, elapsed = NAN;
  // step lines
  double lr = NAN, loss = NAN, grad_norm = NAN, images_per_s = NAN, step_ms = NAN, data_wait_ms = NAN;
  // eval lines (loss above is the val loss)
  double top1 = NAN, top5 = NAN, count = NAN;
  std::string weights;  // "model" or "ema"
};

struct MetricsFile {
  std::vector<MetricsRow> rows;
  std::vector<int64_t> attempt_starts;  // the step each attempt started after, one per "run" line (0 for the first)
};

MetricsFile read_metrics_file(const std::string& path);

inline constexpr const char* kMetricsCsvColumns[] = {
    "kind", "attempt", "step", "epoch", "time", "elapsed", "lr", "loss", "grad_norm", "images_per_s", "step_ms",
    "data_wait_ms", "top1", "top5", "count", "weights"};

std::string metrics_csv(const MetricsFile& metrics);

}  // namespace ddpx
