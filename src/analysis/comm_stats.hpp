// Communication statistics in nccl-tests' terms: bytes, algorithm bandwidth, bus bandwidth, and how close a
// bucket or a step came to the link's measured peak.
// Guarantees:
//  - algbw = bytes / time (GB/s, 1 GB = 1e9 bytes). busbw = algbw * bus_factor, with nccl-tests' factors:
//    all_reduce 2(n-1)/n, all_gather and reduce_scatter (n-1)/n, broadcast 1 (n = world size). With those
//    factors busbw is comparable across world sizes and against the link's hardware bandwidth.
//  - "bytes" is what was handed to the collective (nccl-tests' "size"; after the hook's compression). The bytes
//    one rank actually sends are bytes * bus_factor ("wire bytes per rank").
//  - A PeakTable (size -> busbw) comes from `ddpx allreduce`; busbw_at() interpolates linearly in log2(size)
//    between measured sizes and clamps outside them.
//  - Per step: busy time is the sum of the buckets' device times (start to end; one comm stream runs them one after
//    another), and "% of peak" is the time the buckets would take at peak busbw over the time they took.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/peak_table.hpp"
#include "report/step_record.hpp"

namespace ddpx {

double bus_factor(Collective collective, int world);
// bytes / ms -> GB/s; 0 when ms <= 0 (a timer that did not tick says nothing about bandwidth).
double algbw_GBps(int64_t bytes, double ms);
double busbw_GBps(Collective collective, int world, int64_t bytes, double ms);

PeakTable load_peak_table(const std::string& path);  // errors name the file

struct BucketCommStats {
  int index = 0;
  int64_t bytes = 0;
  int64_t elements = 0;
  std::string hook;
  double time_ms = 0;  // start to end on the device
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  std::optional<double> peak_busbw_GBps;  // with a peak table
  std::optional<double> pct_of_peak;      // 100 * busbw / peak busbw
};

struct StepCommStats {
  int64_t bytes = 0;                // payload handed to collectives in the step
  int64_t wire_bytes_per_rank = 0;  // bytes * bus factor
  double busy_ms = 0;               // sum of bucket device times
  double window_ms = 0;             // first launch to last end
  double algbw_GBps = 0;            // bytes / busy
  double busbw_GBps = 0;
  std::optional<double> pct_of_peak;
  std::vector<BucketCommStats> buckets;
};

// Statistics of one step's buckets at this world size; a non-empty peak fills the "% of peak" fields.
StepCommStats step_comm_stats(const StepRecord& step, int world, const PeakTable* peak = nullptr);

// The buckets of the first step of rank 0 that recorded any (CUDA runs sample bucket timings only at progress
// lines, so most steps carry none); empty when no step did.
const std::vector<BucketRecord>& bucket_layout(const RunReport& report);

// The run's typical step: per bucket index, median over every rank's steps of the device time (sizes from the
// first step); totals recomputed from those medians. Throws ddpx::Error when the report has no steps.
StepCommStats run_comm_stats(const RunReport& report, const PeakTable* peak = nullptr);

// nccl-tests-style table: header, one line per bucket (index, size, elements, time, algbw, busbw, peak, % of peak),
// a summary line per step.
std::string format_comm_stats(const StepCommStats& stats, int world, const std::string& link);

void to_json(nlohmann::json& j, const BucketCommStats& value);
void to_json(nlohmann::json& j, const StepCommStats& value);

}  // namespace ddpx
