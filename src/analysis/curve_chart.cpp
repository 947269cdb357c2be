// Training curves as SVG (see curve_chart.hpp).
#include "analysis/curve_chart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "analysis/metrics_table.hpp"
#include "analysis/svg_chart.hpp"

namespace ddpx {
namespace {

constexpr double kWidth = 720, kPanelHeight = 220, kLeft = 70, kRight = 150, kTop = 36, kBottom = 34;
const char* const kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};

std::string panel_svg(const CurvePanel& panel, const std::vector<int64_t>& resumed_from, double y0) {
  double xmax = 1, vmin = INFINITY, vmax = -INFINITY;
  for (const CurveSeries& s : panel.series)
    for (const auto& [x, v] : s.points)
      if (std::isfinite(v)) xmax = std::max(xmax, x), vmin = std::min(vmin, v), vmax = std::max(vmax, v);
  if (vmin >= 0 && vmin < vmax / 2) vmin = 0;
  const AxisTicks yt = nice_range_ticks(vmin, vmax, 4);
  const AxisTicks xt = nice_ticks(xmax, 6);
  const double ylow = yt.values.front(), yspan = yt.values.back() - yt.values.front();
  const double plot_w = kWidth - kLeft - kRight, plot_h = kPanelHeight - kTop - kBottom;
  const auto px = [&](double x) { return kLeft + plot_w * x / xt.axis_max; };
  const auto py = [&](double v) { return y0 + kTop + plot_h * (1 - (v - ylow) / yspan); };
  std::string out = fmt::format("<g class=\"panel\">\n<text x=\"{}\" y=\"{}\" font-size=\"13\" font-weight=\"bold\">{}"
                                "</text>\n",
                                kLeft, y0 + 20, escape_xml(panel.title));
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>\n", kLeft,
                     y0 + kTop, plot_w, plot_h);
  for (size_t i = 0; i < yt.values.size(); ++i) {
    const double y = py(yt.values[i]);
    out += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#eee\"/>\n", kLeft, y,
                       kLeft + plot_w, y);
    out += fmt::format("<text class=\"ytick\" x=\"{}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"end\">{}</text>\n",
                       kLeft - 6, y + 4, escape_xml(yt.labels[i]));
  }
  for (size_t i = 0; i < xt.values.size(); ++i)
    out += fmt::format(
        "<text class=\"xtick\" x=\"{:.1f}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>\n",
        px(xt.values[i]), y0 + kTop + plot_h + 16, escape_xml(xt.labels[i]));
  out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">step</text>\n",
                     kLeft + plot_w / 2, y0 + kPanelHeight - 4);
  for (const int64_t step : resumed_from) {
    const double x = px(static_cast<double>(step));
    out += fmt::format("<line class=\"resume\" x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#777\" "
                       "stroke-dasharray=\"4 3\"/>\n<text x=\"{:.1f}\" y=\"{}\" font-size=\"10\" fill=\"#555\">"
                       "resumed</text>\n",
                       x, y0 + kTop, x, y0 + kTop + plot_h, x + 3, y0 + kTop + 10);
  }
  for (size_t k = 0; k < panel.series.size(); ++k) {
    const CurveSeries& s = panel.series[k];
    const char* colour = kColours[k % std::size(kColours)];
    // One polyline per attempt, its points in step order.
    std::map<int, std::vector<std::pair<double, double>>> by_attempt;
    for (size_t i = 0; i < s.points.size(); ++i)
      if (std::isfinite(s.points[i].second)) by_attempt[s.attempts.empty() ? 1 : s.attempts[i]].push_back(s.points[i]);
    for (auto& [attempt, points] : by_attempt) {
      std::stable_sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      std::string coordinates;
      for (const auto& [x, v] : points) coordinates += fmt::format("{:.1f},{:.1f} ", px(x), py(v));
      out += fmt::format("<polyline data-series=\"{}\" data-attempt=\"{}\" fill=\"none\" stroke=\"{}\" "
                         "stroke-width=\"1.5\" points=\"{}\"/>\n",
                         escape_xml(s.name), attempt, colour, coordinates);
      if (points.size() == 1)
        out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", px(points[0].first),
                           py(points[0].second), colour);
    }
    const double ly = y0 + kTop + 14 + 18 * static_cast<double>(k);
    out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2\"/>\n",
                       kLeft + plot_w + 10, ly - 4, kLeft + plot_w + 28, ly - 4, colour);
    out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\">{}</text>\n", kLeft + plot_w + 32, ly,
                       escape_xml(s.name));
  }
  return out + "</g>\n";
}

void add_point(CurveSeries& series, const MetricsRow& row, double value) {
  series.points.emplace_back(static_cast<double>(row.step), value);
  series.attempts.push_back(row.attempt);
}

}  // namespace

std::string render_curves_svg(const std::string& title, const TrainingCurves& curves) {
  std::vector<const CurvePanel*> drawn;
  for (const CurvePanel& p : curves.panels) {
    bool any = false;
    for (const CurveSeries& s : p.series)
      for (const auto& point : s.points) any = any || std::isfinite(point.second);
    if (any) drawn.push_back(&p);
  }
  const double height = 30 + kPanelHeight * static_cast<double>(drawn.size());
  std::string out = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
      "class=\"curves\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n<text x=\"{}\" y=\"20\" font-size=\"14\">{}</text>\n",
      kWidth, height, kLeft, escape_xml(title));
  for (size_t i = 0; i < drawn.size(); ++i)
    out += panel_svg(*drawn[i], curves.resumed_from, 30 + kPanelHeight * static_cast<double>(i));
  return out + "</svg>\n";
}

TrainingCurves read_metrics_curves(const std::string& path) {
  const MetricsFile file = read_metrics_file(path);
  CurveSeries train_loss{"train loss", {}, {}}, val_loss{"val loss", {}, {}}, ema_loss{"val loss (EMA)", {}, {}};
  CurveSeries lr{"lr", {}, {}}, top1{"top-1", {}, {}}, top5{"top-5", {}, {}}, ema_top1{"top-1 (EMA)", {}, {}};
  CurveSeries step_ms{"step", {}, {}}, wait_ms{"data wait", {}, {}};
  for (const MetricsRow& row : file.rows) {
    if (row.kind == "step") {
      add_point(train_loss, row, row.loss);
      add_point(lr, row, row.lr);
      add_point(step_ms, row, row.step_ms);
      add_point(wait_ms, row, row.data_wait_ms);
    } else if (row.weights == "ema") {
      add_point(ema_loss, row, row.loss);
      add_point(ema_top1, row, row.top1);
    } else {
      add_point(val_loss, row, row.loss);
      add_point(top1, row, row.top1);
      add_point(top5, row, row.top5);
    }
  }
  TrainingCurves curves;
  curves.panels = {{"loss", {train_loss, val_loss}},
                   {"learning rate", {lr}},
                   {"validation accuracy (%)", {top1, top5}},
                   {"step time (ms, mean since the previous point)", {step_ms}},
                   {"data wait per step (ms)", {wait_ms}}};
  if (!ema_loss.points.empty()) {
    curves.panels[0].series.push_back(ema_loss);
    curves.panels[2].series.push_back(ema_top1);
  }
  for (size_t i = 1; i < file.attempt_starts.size(); ++i) curves.resumed_from.push_back(file.attempt_starts[i]);
  return curves;
}

}  // namespace ddpx
