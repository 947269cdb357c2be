// nccl-tests' all_reduce_perf text layout (see nccl_tests_format.hpp).
#include "cli/nccl_tests_format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/internal_assert.hpp"

namespace ddpx::cli {

RankTimeAggregate parse_rank_time_aggregate(int value) {
  DDPX_REQUIRE(value >= 0 && value <= 3,
               "--average {}: expected 0 (rank 0's time), 1 (mean over ranks), 2 (min) or 3 (max), as nccl-tests' -a",
               value);
  return static_cast<RankTimeAggregate>(value);
}

const char* rank_time_aggregate_name(RankTimeAggregate aggregate) {
  switch (aggregate) {
    case RankTimeAggregate::rank0: return "rank 0";
    case RankTimeAggregate::mean: return "mean over ranks";
    case RankTimeAggregate::min: return "fastest rank";
    case RankTimeAggregate::max: return "slowest rank";
  }
  return "?";
}

double aggregate_rank_times(const std::vector<double>& times, RankTimeAggregate aggregate) {
  DDPX_INTERNAL_ASSERT(!times.empty(), "no per-rank times to aggregate");
  switch (aggregate) {
    case RankTimeAggregate::rank0: return times.front();
    case RankTimeAggregate::min: return *std::min_element(times.begin(), times.end());
    case RankTimeAggregate::max: return *std::max_element(times.begin(), times.end());
    case RankTimeAggregate::mean: break;
  }
  double sum = 0;
  for (double t : times) sum += t;
  return sum / static_cast<double>(times.size());
}

namespace {

// A non-negative number right-aligned in `width` characters: 2 decimals while they fit, then 1, then none (a
// number too large for the width widens the field rather than turning into an exponent).
std::string fitted(double value, int width) {
  const double v = std::max(0.0, value);
  const int digits = v < 1 ? 1 : static_cast<int>(std::floor(std::log10(v))) + 1;
  const int decimals = digits + 3 <= width ? 2 : digits + 2 <= width ? 1 : 0;
  return fmt::format("{:>{}.{}f}", v, width, decimals);
}

std::string step_text(const std::vector<int64_t>& sizes) {
  if (sizes.size() < 2) return "1(factor)";
  const int64_t diff = sizes[1] - sizes[0];
  bool factor = sizes[0] > 0 && sizes[1] % sizes[0] == 0, bytes = true;
  const int64_t ratio = factor ? sizes[1] / sizes[0] : 0;
  for (size_t i = 1; i < sizes.size(); ++i) {
    factor = factor && sizes[i] == sizes[i - 1] * ratio;
    bytes = bytes && sizes[i] - sizes[i - 1] == diff;
  }
  if (factor && ratio > 1) return fmt::format("{}(factor)", ratio);
  if (bytes) return fmt::format("{}(bytes)", diff);
  return "0(list)";
}

}  // namespace

std::string format_nccl_tests_device_line(const NcclTestsRankDevice& d) {
  const bool cpu = d.device < 0;
  return fmt::format("#  Rank {:>2} Group {:>2} Pid {:>6} on {:>10} device {:>2} [{}] {}\n", d.rank, 0, d.pid,
                     d.host.empty() ? "?" : d.host, cpu ? 0 : d.device, cpu || d.bus_id.empty() ? "cpu" : d.bus_id,
                     cpu || d.name.empty() ? "cpu" : d.name);
}

std::string format_nccl_tests_header(const NcclTestsRunInfo& run, const std::vector<std::string>& device_lines) {
  const int64_t min_bytes = run.sizes.empty() ? 0 : *std::min_element(run.sizes.begin(), run.sizes.end());
  const int64_t max_bytes = run.sizes.empty() ? 0 : *std::max_element(run.sizes.begin(), run.sizes.end());
  std::string out = fmt::format("# Collective test starting: {} (nccl-tests all_reduce_perf format)\n", run.program);
  out += fmt::format("# nThread 1 nGpus 1 minBytes {} maxBytes {} step: {} warmup iters: {} iters: {} agg iters: 1 "
                     "validation: 1 graph: 0\n",
                     min_bytes, max_bytes, step_text(run.sizes), run.warmup, run.iters);
  if (!run.library.empty()) out += fmt::format("# Library: {}\n", run.library);
  if (!run.link.empty()) out += fmt::format("# Link: {}\n", run.link);
  out += fmt::format("# Time: {} (nccl-tests -a {}); algbw = size / time; busbw = algbw * 2(n-1)/n; 1 GB/s = 1e9 "
                     "B/s\n",
                     rank_time_aggregate_name(run.aggregate), static_cast<int>(run.aggregate));
  out += "#\n# Using devices\n";
  for (const std::string& line : device_lines) out += line.empty() || line.back() == '\n' ? line : line + "\n";
  out += "#\n";
  out += fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}           out-of-place                       in-place\n",
                     "", "", "", "", "");
  out += fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}\n",
                     "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
                     "busbw", "#wrong");
  out += fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}\n",
                     "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  while (out.size() > 1 && out[out.size() - 2] == ' ') out.erase(out.size() - 2, 1);  // no trailing blanks
  return out;
}

std::string format_nccl_tests_row(const NcclTestsRow& row) {
  auto part = [](const NcclTestsMeasurement& m) {
    return fmt::format("  {}  {}  {}  {:>6}", fitted(m.time_us, 7), fitted(m.algbw_GBps, 6), fitted(m.busbw_GBps, 6),
                       m.wrong);
  };
  return fmt::format("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}", row.bytes, row.count, row.type, row.redop, row.root) +
         part(row.out_of_place) + part(row.in_place) + "\n";
}

double nccl_tests_avg_busbw(const std::vector<NcclTestsRow>& rows) {
  if (rows.empty()) return 0;
  double sum = 0;
  for (const NcclTestsRow& row : rows) sum += row.out_of_place.busbw_GBps + row.in_place.busbw_GBps;
  return sum / (2.0 * static_cast<double>(rows.size()));
}

std::string format_nccl_tests_footer(const NcclTestsRunInfo& run, const std::vector<NcclTestsRow>& rows) {
  int wrong_measurements = 0;
  for (const NcclTestsRow& row : rows) wrong_measurements += (row.out_of_place.wrong > 0) + (row.in_place.wrong > 0);
  std::string out = fmt::format("# {:<20} : {} {}\n", "Out of bounds values", wrong_measurements,
                                wrong_measurements == 0 ? "OK" : "FAILED");
  out += fmt::format("# {:<20} : {:.4f}\n", "Avg bus bandwidth", nccl_tests_avg_busbw(rows));
  out += fmt::format("#\n# Collective test concluded: {}\n", run.program);
  return out;
}

}  // namespace ddpx::cli
