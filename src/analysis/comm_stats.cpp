// Bandwidth arithmetic and peak comparison (see comm_stats.hpp).
#include "analysis/comm_stats.hpp"

#include <optional>
#include <sstream>

#include "analysis/nccl_tests_log.hpp"
#include "analysis/peak_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.hpp"
#include "core/json_parse.hpp"
#include "io/posix_file.hpp"
#include "report/json_fields.hpp"
#include "analysis/spread.hpp"

namespace ddpx {

using nlohmann::json;

double bus_factor(Collective collective, int world) {
  DDPX_REQUIRE(world >= 1, "bus factor: world size must be >= 1, got {}", world);
  const double n = world;
  switch (collective) {
    case Collective::all_reduce: return 2.0 * (n - 1) / n;
    case Collective::all_gather:
    case Collective::reduce_scatter: return (n - 1) / n;
    case Collective::broadcast: return 1.0;
  }
  return 0;
}

double algbw_GBps(int64_t bytes, double ms) {
  if (ms <= 0) return 0;
  return static_cast<double>(bytes) / 1e9 / (ms / 1e3);
}

double busbw_GBps(Collective collective, int world, int64_t bytes, double ms) {
  return algbw_GBps(bytes, ms) * bus_factor(collective, world);
}

PeakTable load_peak_table(const std::string& path) {
  std::stringstream text;
  text << read_small_file(path, uint64_t{64} << 20,
                          fmt::format("peak table (write one with `ddpx allreduce --json {}`)", path));
  // nccl-tests' own text or -J JSON (analysis/nccl_tests_log.hpp), else ddpx's peak table.
  if (std::optional<PeakTable> table = peak_table_from_nccl_tests(text.str(), "peak table '" + path + "'"))
    return *table;
  try {
    std::istringstream json_text(text.str());
    return parse_json(json_text, "the file").get<PeakTable>();
  } catch (const json::exception& e) {
    fail("peak table '{}' is not valid JSON: {}", path, e.what());
  } catch (const Error& e) {
    fail("peak table '{}': {}", path, e.what());
  }
}

namespace {

BucketCommStats bucket_stats(const BucketRecord& bucket, double time_ms, int world, const PeakTable* peak) {
  BucketCommStats out;
  out.index = bucket.index;
  out.bytes = bucket.bytes;
  out.elements = bucket.elements;
  out.hook = bucket.hook;
  out.time_ms = time_ms;
  const Collective collective = parse_collective(bucket.collective);
  out.algbw_GBps = algbw_GBps(bucket.bytes, time_ms);
  out.busbw_GBps = out.algbw_GBps * bus_factor(collective, world);
  if (peak && !peak->empty() && peak->collective() == collective && bus_factor(collective, world) > 0) {
    out.peak_busbw_GBps = peak->busbw_at(bucket.bytes);
    out.pct_of_peak = 100.0 * out.busbw_GBps / *out.peak_busbw_GBps;
  }
  return out;
}

StepCommStats totals(std::vector<BucketCommStats> buckets, const std::vector<BucketRecord>& records, int world,
                     double window_ms) {
  StepCommStats out;
  out.buckets = std::move(buckets);
  out.window_ms = window_ms;
  double wire_bytes = 0, ideal_ms = 0;
  bool all_have_peak = !out.buckets.empty();
  for (size_t b = 0; b < out.buckets.size(); ++b) {
    const BucketCommStats& s = out.buckets[b];
    const double factor = bus_factor(parse_collective(records[b].collective), world);
    out.bytes += s.bytes;
    out.busy_ms += s.time_ms;
    wire_bytes += static_cast<double>(s.bytes) * factor;
    if (s.peak_busbw_GBps) {
      ideal_ms += static_cast<double>(s.bytes) * factor / (*s.peak_busbw_GBps * 1e9) * 1e3;
    } else {
      all_have_peak = false;
    }
  }
  out.wire_bytes_per_rank = static_cast<int64_t>(std::llround(wire_bytes));
  out.algbw_GBps = algbw_GBps(out.bytes, out.busy_ms);
  out.busbw_GBps = out.busy_ms > 0 ? wire_bytes / 1e9 / (out.busy_ms / 1e3) : 0;
  if (all_have_peak && out.busy_ms > 0) out.pct_of_peak = 100.0 * ideal_ms / out.busy_ms;
  return out;
}

}  // namespace

StepCommStats step_comm_stats(const StepRecord& step, int world, const PeakTable* peak) {
  std::vector<BucketCommStats> buckets;
  for (const BucketRecord& bucket : step.buckets)
    buckets.push_back(bucket_stats(bucket, bucket.end_ms - bucket.start_ms, world, peak));
  return totals(std::move(buckets), step.buckets, world, comm_window_ms(step.buckets));
}

const std::vector<BucketRecord>& bucket_layout(const RunReport& report) {
  static const std::vector<BucketRecord> none;
  if (report.ranks.empty()) return none;
  for (const StepRecord& step : report.ranks.front().steps)
    if (!step.buckets.empty()) return step.buckets;
  return none;
}

StepCommStats run_comm_stats(const RunReport& report, const PeakTable* peak) {
  DDPX_REQUIRE(!report.ranks.empty() && !report.ranks.front().steps.empty(),
               "communication statistics: the run report has no measured steps");
  const std::vector<BucketRecord>& layout = bucket_layout(report);
  if (layout.empty()) return StepCommStats{};  // no step sampled its buckets (or no DDP)
  std::map<int, std::vector<double>> times;
  std::vector<double> windows;
  for (const RankRun& rank : report.ranks) {
    for (const StepRecord& step : rank.steps) {
      if (step.buckets.empty()) continue;  // a step whose bucket timings were not sampled
      for (const BucketRecord& bucket : step.buckets) times[bucket.index].push_back(bucket.end_ms - bucket.start_ms);
      windows.push_back(comm_window_ms(step.buckets));
    }
  }
  std::vector<BucketCommStats> buckets;
  for (const BucketRecord& bucket : layout)
    buckets.push_back(bucket_stats(bucket, median_of(times[bucket.index]), report.config.world, peak));
  return totals(std::move(buckets), layout, report.config.world, median_of(windows));
}

std::string format_comm_stats(const StepCommStats& s, int world, const std::string& link) {
  std::string out = fmt::format("# ddpx communication: {} rank{}, link {}\n#\n", world, world == 1 ? "" : "s",
                                link.empty() ? "unknown" : link);
  out += fmt::format("# {:>6} {:>14} {:>12} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9}\n", "bucket", "size(B)",
                     "elements", "hook", "time(ms)", "algbw", "busbw", "peak", "% peak");
  out += fmt::format("# {:>6} {:>14} {:>12} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9}\n", "", "", "", "", "", "(GB/s)",
                     "(GB/s)", "(GB/s)", "");
  for (const BucketCommStats& b : s.buckets) {
    out += fmt::format("  {:>6} {:>14} {:>12} {:>10} {:>10.3f} {:>9.2f} {:>9.2f} {:>9} {:>9}\n", b.index, b.bytes,
                       b.elements, b.hook, b.time_ms, b.algbw_GBps, b.busbw_GBps,
                       b.peak_busbw_GBps ? fmt::format("{:.2f}", *b.peak_busbw_GBps) : "-",
                       b.pct_of_peak ? fmt::format("{:.1f}", *b.pct_of_peak) : "-");
  }
  out += fmt::format("# per step: {} buckets, {:.3f} GB handed to collectives ({:.3f} GB sent per rank), "
                     "{:.3f} ms communicating within a {:.3f} ms window\n",
                     s.buckets.size(), static_cast<double>(s.bytes) / 1e9,
                     static_cast<double>(s.wire_bytes_per_rank) / 1e9, s.busy_ms, s.window_ms);
  out += fmt::format("# per step: algbw {:.2f} GB/s, busbw {:.2f} GB/s{}\n", s.algbw_GBps, s.busbw_GBps,
                     s.pct_of_peak ? fmt::format(", {:.1f}% of the measured peak", *s.pct_of_peak) : "");
  if (world == 1)
    out += "# one rank: nothing crosses a link (the all-reduce hook skips the collective); the times are the hooks' "
           "own work and algbw only says how fast that was\n";
  return out;
}

void to_json(json& j, const BucketCommStats& v) {
  j = json{{"index", v.index},         {"bytes", v.bytes},         {"elements", v.elements},
           {"hook", v.hook},           {"time_ms", v.time_ms},     {"algbw_GBps", v.algbw_GBps},
           {"busbw_GBps", v.busbw_GBps}};
  j["peak_busbw_GBps"] = v.peak_busbw_GBps ? json(*v.peak_busbw_GBps) : json(nullptr);
  j["pct_of_peak"] = v.pct_of_peak ? json(*v.pct_of_peak) : json(nullptr);
}

void to_json(json& j, const StepCommStats& v) {
  j = json{{"bytes", v.bytes},           {"wire_bytes_per_rank", v.wire_bytes_per_rank},
           {"busy_ms", v.busy_ms},       {"window_ms", v.window_ms},
           {"algbw_GBps", v.algbw_GBps}, {"busbw_GBps", v.busbw_GBps},
           {"buckets", v.buckets}};
  j["pct_of_peak"] = v.pct_of_peak ? json(*v.pct_of_peak) : json(nullptr);
}

}  // namespace ddpx
