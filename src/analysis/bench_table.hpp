// BenchTable: `ddpx bench` results as Markdown, CSV, JSON and a bar chart, ddpx beside PyTorch.
// Guarantees:
//  - ratio = ddpx steps/s / PyTorch steps/s, when PyTorch was measured.
//  - scaling efficiency (rows with world > 1) = steps/s at N GPUs / steps/s of the fastest 1-GPU row of the same
//    precision. With the per-GPU batch fixed (the seed's setting) that is images/s per GPU at N over images/s on
//    one GPU: 100% is perfect weak scaling. Absent when no 1-GPU row of that precision exists.
//  - images/s and MFU (per GPU: images/s x the model's training FLOPs per image / N / the GPU's dense bf16 peak)
//    are columns of their own, "-" where unknown (CPU ranks, an unknown GPU).
//  - Every row appears in every format, in the given order; missing values print "-" (Markdown), "" (CSV) and
//    null (JSON). CSV and JSON give model, precision, hook, bucket cap and P2P as columns of their own (the
//    "config" column keeps the row's readable name), so a spreadsheet or pandas can group by each.
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "analysis/svg_chart.hpp"

namespace ddpx {

struct BenchRow {
  std::string config;     // "fp32, bucket 2000 MB, hook bf16"
  std::string precision;  // "fp32", "tf32", "bf16"
  int world = 1;
  double ddpx_steps_per_s = 0;
  std::optional<double> pytorch_steps_per_s;
  std::string model;      // scaling efficiency compares rows of the same model and precision
  std::optional<double> images_per_s;  // ddpx's, all ranks together
  std::optional<double> mfu;           // model FLOP utilization per GPU (topology/gpu_peaks.hpp), when the GPU is known
  std::string hook;                    // --comm-hook of a DDP row; "" without DDP
  std::optional<double> bucket_mb;     // --bucket-mb of a DDP row
  bool p2p_off = false;                // NCCL_P2P_DISABLE=1
  bool operator==(const BenchRow&) const = default;
};

// Throws ddpx::Error naming the row when a throughput is not positive or the world size is below 1.
void validate_bench_rows(const std::vector<BenchRow>& rows);

std::optional<double> pytorch_ratio(const BenchRow& row);
std::optional<double> scaling_efficiency(const std::vector<BenchRow>& rows, size_t index);

// rank_unit names what a rank is in the table and the chart: "GPU" (cuda) or "rank" (CPU ranks under MPI).
std::string bench_markdown(const std::vector<BenchRow>& rows, const std::string& rank_unit = "GPU");
std::string bench_csv(const std::vector<BenchRow>& rows);
nlohmann::json bench_json(const std::vector<BenchRow>& rows);
// Categories "config (N GPUs)", series "ddpx" and (when any row has it) "PyTorch", notes "eff 93%" with a note
// legend defining eff (when any row has one), and the scaling view (ddpx steps/s and scaling efficiency of every
// row against its rank count) exactly when the rows differ in rank count.
BarChart bench_chart(const std::vector<BenchRow>& rows, const std::string& title, const std::string& rank_unit = "GPU");

}  // namespace ddpx
