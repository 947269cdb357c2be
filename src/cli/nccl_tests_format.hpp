// `ddpx allreduce`'s text output in nccl-tests' all_reduce_perf layout, as pure functions of the measurements, so
// that scripts written for nccl-tests read it unchanged.
// Guarantees:
//  - Header: a "# Collective test starting:" line, the "# nThread 1 nGpus 1 minBytes .. maxBytes .. step: ..
//    warmup iters: .. iters: .. agg iters: 1 validation: 1 graph: 0" line, a library line ("# Library: NCCL 2.28.3"
//    or the MPI library's own version text), "# Using devices" and one "#  Rank  R Group  0 Pid P on HOST device D
//    [BUS] NAME" line per rank (nccl-tests' layout, which its own parser reads back), then the two-row column header
//    with the out-of-place and in-place groups.
//  - A data row has nccl-tests' 13 fields in its order: size (B), count (elements), type, redop, root, then time (us),
//    algbw (GB/s), busbw (GB/s), #wrong for out of place, and the same four for in place. Numbers are plain decimals
//    (never exponents), fewer decimals as they grow, so a regex of \d+ and [\d.]+ fields reads every row.
//  - Footer: "# Out of bounds values : N OK|FAILED" (N = measurements with any wrong element) and "# Avg bus
//    bandwidth    : X" where X is the mean busbw over every printed measurement, out of place and in place
//    (nccl-tests' definition), then "# Collective test concluded:".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ddpx::cli {

// How the time of one measurement is taken over the ranks: nccl-tests' -a (0 rank 0, 1 mean, 2 min, 3 max).
enum class RankTimeAggregate { rank0 = 0, mean = 1, min = 2, max = 3 };
RankTimeAggregate parse_rank_time_aggregate(int value);  // the error names --average and its values
const char* rank_time_aggregate_name(RankTimeAggregate aggregate);
// The chosen aggregate of per-rank times (times non-empty, index = rank).
double aggregate_rank_times(const std::vector<double>& times, RankTimeAggregate aggregate);

struct NcclTestsRunInfo {
  std::string program = "ddpx allreduce";
  std::vector<int64_t> sizes;  // bytes, in the order measured
  int warmup = 0;
  int iters = 0;
  std::string library;  // "NCCL 2.28.3", "Open MPI v4.1.6, ..."; "" prints none
  std::string link;     // "# Link: ..." line ("NV18 (NCCL transport predicted: P2P)"); "" prints none
  RankTimeAggregate aggregate = RankTimeAggregate::mean;
};

// One line per rank, without the "#  Rank" prefix's '\n'; device -1 prints as nccl-tests' device field 0 with
// bus "cpu" and name "cpu".
struct NcclTestsRankDevice {
  int rank = 0;
  int pid = 0;
  std::string host;
  int device = -1;  // CUDA device index; -1 on the CPU
  std::string bus_id;  // "0000:19:00"; "" on the CPU
  std::string name;    // "NVIDIA H200"; "" on the CPU
};
std::string format_nccl_tests_device_line(const NcclTestsRankDevice& device);

struct NcclTestsMeasurement {
  double time_us = 0;
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  int64_t wrong = 0;
};

struct NcclTestsRow {
  int64_t bytes = 0;
  int64_t count = 0;
  std::string type;  // nccl-tests' word: float, half, bfloat16
  std::string redop = "sum";
  int root = -1;  // all-reduce has no root
  NcclTestsMeasurement out_of_place, in_place;
};

// device_lines: format_nccl_tests_device_line's of every rank, in rank order.
std::string format_nccl_tests_header(const NcclTestsRunInfo& run, const std::vector<std::string>& device_lines);
std::string format_nccl_tests_row(const NcclTestsRow& row);
// Mean busbw over both measurements of every row (0 with no rows).
double nccl_tests_avg_busbw(const std::vector<NcclTestsRow>& rows);
std::string format_nccl_tests_footer(const NcclTestsRunInfo& run, const std::vector<NcclTestsRow>& rows);

}  // namespace ddpx::cli
