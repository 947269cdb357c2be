// Training curves as SVG (`ddpx report --metrics FILE --curves OUT.svg`): panels stacked vertically, each a line
// chart of one quantity against the optimizer step (loss, learning rate, accuracy), read from --metrics JSON
// Lines (train/metrics_log.hpp).
// Guarantees: a standalone SVG 1.1 document (every text escaped, profile/svg_chart.hpp's escape_xml); each panel
// has round y ticks (nice_ticks) from its series' minimum (0 when all values are >= 0 and the minimum is below half
// the maximum) to its maximum, x ticks in steps, one polyline per series in a legend colour, and non-finite values
// skipped; a panel with no points is left out. read_metrics_curves() throws ddpx::Error naming the file and line
// of anything that is not a metrics object.
#pragma once
#include <string>
#include <vector>

namespace ddpx {

struct CurveSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (step, value)
};

struct CurvePanel {
  std::string title;  // "loss", "learning rate", "top-1 (%)"
  std::vector<CurveSeries> series;
};

std::string render_curves_svg(const std::string& title, const std::vector<CurvePanel>& panels);
// Panels of a --metrics file: training loss (and val loss), learning rate, val top-1/top-5 (model and EMA).
std::vector<CurvePanel> read_metrics_curves(const std::string& path);

}  // namespace ddpx
