// Bench result rendering (see bench_table.hpp).
#include "analysis/bench_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <set>

#include "core/error.hpp"

namespace ddpx {

using nlohmann::json;

void validate_bench_rows(const std::vector<BenchRow>& rows) {
  for (const BenchRow& row : rows) {
    DDPX_REQUIRE(row.world >= 1, "bench row '{}': world size must be >= 1, got {}", row.config, row.world);
    DDPX_REQUIRE(std::isfinite(row.ddpx_steps_per_s) && row.ddpx_steps_per_s > 0,
                 "bench row '{}': ddpx steps/s must be positive, got {}", row.config, row.ddpx_steps_per_s);
    DDPX_REQUIRE(!row.pytorch_steps_per_s || (std::isfinite(*row.pytorch_steps_per_s) && *row.pytorch_steps_per_s > 0),
                 "bench row '{}': PyTorch steps/s must be positive when given, got {}", row.config,
                 row.pytorch_steps_per_s.value_or(0));
    for (const auto& [what, value] : {std::pair{"images/s", row.images_per_s}, std::pair{"MFU", row.mfu}})
      DDPX_REQUIRE(!value || (std::isfinite(*value) && *value > 0), "bench row '{}': {} must be positive when given, "
                   "got {}", row.config, what, value.value_or(0));
  }
}

std::optional<double> pytorch_ratio(const BenchRow& row) {
  if (!row.pytorch_steps_per_s) return std::nullopt;
  return row.ddpx_steps_per_s / *row.pytorch_steps_per_s;
}

std::optional<double> scaling_efficiency(const std::vector<BenchRow>& rows, size_t index) {
  DDPX_REQUIRE(index < rows.size(), "scaling efficiency: row {} of {}", index, rows.size());
  const BenchRow& row = rows[index];
  if (row.world <= 1) return std::nullopt;
  double single = 0;
  for (const BenchRow& other : rows)
    if (other.world == 1 && other.precision == row.precision && other.model == row.model) single = std::max(single, other.ddpx_steps_per_s);
  if (single <= 0) return std::nullopt;
  return row.ddpx_steps_per_s / single;
}

namespace {

std::string optional_number(const std::optional<double>& value, const char* format_spec, const char* missing) {
  return value ? fmt::format(fmt::runtime(format_spec), *value) : missing;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char ch : text) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

std::string markdown_cell(const std::string& text) {
  std::string out;
  for (char ch : text) out += ch == '|' ? std::string("\\|") : std::string(1, ch);
  return out;
}

}  // namespace

std::string bench_markdown(const std::vector<BenchRow>& rows, const std::string& rank_unit) {
  validate_bench_rows(rows);
  std::string out = fmt::format(
      "| configuration | {}s | precision | ddpx steps/s | PyTorch steps/s | ddpx / PyTorch | scaling efficiency "
      "| images/s | MFU |\n"
      "|---|---:|---|---:|---:|---:|---:|---:|---:|\n",
      rank_unit);
  for (size_t i = 0; i < rows.size(); ++i) {
    const BenchRow& r = rows[i];
    const std::optional<double> efficiency = scaling_efficiency(rows, i);
    out += fmt::format("| {} | {} | {} | {:.2f} | {} | {} | {} | {} | {} |\n", markdown_cell(r.config), r.world,
                       r.precision, r.ddpx_steps_per_s, optional_number(r.pytorch_steps_per_s, "{:.2f}", "-"),
                       optional_number(pytorch_ratio(r), "{:.2f}x", "-"),
                       efficiency ? fmt::format("{:.0f}%", 100 * *efficiency) : "-",
                       optional_number(r.images_per_s, "{:.0f}", "-"),
                       r.mfu ? fmt::format("{:.1f}%", 100 * *r.mfu) : "-");
  }
  return out;
}

std::string bench_csv(const std::vector<BenchRow>& rows) {
  validate_bench_rows(rows);
  std::string out = "config,model,gpus,precision,hook,bucket_mb,p2p_off,ddpx_steps_per_s,pytorch_steps_per_s,ratio,"
                    "scaling_efficiency,images_per_s,mfu\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const BenchRow& r = rows[i];
    out += fmt::format("{},{},{},{},{},{},{},{:.4f},{},{},{},{},{}\n", csv_field(r.config), csv_field(r.model),
                       r.world, csv_field(r.precision), csv_field(r.hook), optional_number(r.bucket_mb, "{:g}", ""),
                       r.p2p_off ? 1 : 0,
                       r.ddpx_steps_per_s, optional_number(r.pytorch_steps_per_s, "{:.4f}", ""),
                       optional_number(pytorch_ratio(r), "{:.4f}", ""),
                       optional_number(scaling_efficiency(rows, i), "{:.4f}", ""),
                       optional_number(r.images_per_s, "{:.2f}", ""), optional_number(r.mfu, "{:.4f}", ""));
  }
  return out;
}

json bench_json(const std::vector<BenchRow>& rows) {
  validate_bench_rows(rows);
  auto nullable = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  json out = json::array();
  for (size_t i = 0; i < rows.size(); ++i) {
    const BenchRow& r = rows[i];
    out.push_back(json{{"config", r.config},
                       {"model", r.model},
                       {"gpus", r.world},
                       {"precision", r.precision},
                       {"hook", r.hook.empty() ? json(nullptr) : json(r.hook)},
                       {"bucket_mb", nullable(r.bucket_mb)},
                       {"p2p_off", r.p2p_off},
                       {"ddpx_steps_per_s", r.ddpx_steps_per_s},
                       {"pytorch_steps_per_s", nullable(r.pytorch_steps_per_s)},
                       {"ratio", nullable(pytorch_ratio(r))},
                       {"scaling_efficiency", nullable(scaling_efficiency(rows, i))},
                       {"images_per_s", nullable(r.images_per_s)},
                       {"mfu", nullable(r.mfu)}});
  }
  return out;
}

BarChart bench_chart(const std::vector<BenchRow>& rows, const std::string& title, const std::string& rank_unit) {
  validate_bench_rows(rows);
  BarChart chart;
  chart.title = title;
  ChartSeries ddpx{"ddpx", {}};
  ChartSeries pytorch{"PyTorch", {}};
  bool any_pytorch = false;
  for (size_t i = 0; i < rows.size(); ++i) {
    const BenchRow& r = rows[i];
    chart.categories.push_back(fmt::format("{} ({} {}{})", r.config, r.world, rank_unit, r.world == 1 ? "" : "s"));
    ddpx.values.push_back(r.ddpx_steps_per_s);
    pytorch.values.push_back(r.pytorch_steps_per_s);
    any_pytorch = any_pytorch || r.pytorch_steps_per_s.has_value();
    const std::optional<double> efficiency = scaling_efficiency(rows, i);
    chart.notes.push_back(efficiency ? fmt::format("eff {:.0f}%", 100 * *efficiency) : "");
  }
  chart.series.push_back(std::move(ddpx));
  if (any_pytorch) chart.series.push_back(std::move(pytorch));
  if (std::any_of(chart.notes.begin(), chart.notes.end(), [](const std::string& note) { return !note.empty(); }))
    chart.note_legend = fmt::format(
        "eff = scaling efficiency: steps/s at N {0}s / steps/s of the fastest 1-{0} row of the same model and "
        "precision (100% = perfect weak scaling)",
        rank_unit);
  std::set<int> rank_counts;
  for (const BenchRow& r : rows) rank_counts.insert(r.world);
  if (rank_counts.size() > 1) {
    // One line per configuration (a row's name: model, precision, hook, bucket). A one-rank row without DDP is
    // the start of every line of its model and precision that has more ranks; it stands alone otherwise.
    ScalingView view;
    view.rank_unit = rank_unit;
    for (size_t i = 0; i < rows.size(); ++i) {
      const BenchRow& r = rows[i];
      const bool baseline = r.world == 1 && r.hook.empty();
      bool joined = false;
      if (baseline)
        for (const BenchRow& other : rows)
          if (other.world > 1 && other.model == r.model && other.precision == r.precision &&
              std::none_of(view.points.begin(), view.points.end(),
                           [&](const ScalingPoint& p) { return p.line == other.config && p.ranks == 1; })) {
            view.points.push_back({1, r.ddpx_steps_per_s, std::nullopt, other.config});
            joined = true;
          }
      if (!joined) view.points.push_back({r.world, r.ddpx_steps_per_s, scaling_efficiency(rows, i), r.config});
    }
    chart.scaling = std::move(view);
  }
  return chart;
}

}  // namespace ddpx
