// Training curves as SVG (`ddpx report --metrics FILE --curves OUT.svg`, and the curves of `ddpx report --html`):
// panels stacked vertically, each a line chart of one quantity against the optimizer step (loss, learning rate,
// accuracy, step time, data wait), read from --metrics JSON Lines (train/metrics_log.hpp,
// analysis/metrics_table.hpp).
// Guarantees: a standalone SVG 1.1 document (every text escaped, analysis/svg_chart.hpp's escape_xml); each panel
// has round y ticks (nice_range_ticks: multiples of a 1-2-5 step around its finite values, 0 included when all
// values are >= 0 and the minimum is below half the maximum), round x ticks in steps, its series in legend colours
// and non-finite values skipped; a panel with no points is left out. Every attempt of a resumed run is drawn: each
// series is one polyline per attempt (an attempt's points in step order, never joined to another attempt's), and
// a dashed vertical line marks the step each later attempt resumed from. Points sit inside their panel's plot box.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ddpx {

struct CurveSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (step, value)
  std::vector<int> attempts;                      // empty, or one per point: the attempt it belongs to
};

struct CurvePanel {
  std::string title;  // "loss", "learning rate", "top-1 (%)"
  std::vector<CurveSeries> series;
};

struct TrainingCurves {
  std::vector<CurvePanel> panels;
  std::vector<int64_t> resumed_from;  // the step each attempt after the first started after
};

std::string render_curves_svg(const std::string& title, const TrainingCurves& curves);
// Panels of a --metrics file: training (and val) loss, learning rate, val top-1/top-5 (model and EMA), step time
// and data wait per step.
TrainingCurves read_metrics_curves(const std::string& path);

}  // namespace ddpx
