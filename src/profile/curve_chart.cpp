// Training curves as SVG (see curve_chart.hpp).
#include "profile/curve_chart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "io/posix_file.hpp"
#include "profile/svg_chart.hpp"

namespace ddpx {
namespace {

constexpr double kWidth = 720, kPanelHeight = 220, kLeft = 70, kRight = 150, kTop = 36, kBottom = 34;
constexpr uint64_t kMaxMetricsBytes = uint64_t{4} << 30;  // a metrics line per step: 4 GiB is millions of steps
const char* const kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};

std::string panel_svg(const CurvePanel& panel, double y0) {
  double xmax = 1, vmin = INFINITY, vmax = -INFINITY;
  for (const CurveSeries& s : panel.series)
    for (const auto& [x, v] : s.points)
      if (std::isfinite(v)) xmax = std::max(xmax, x), vmin = std::min(vmin, v), vmax = std::max(vmax, v);
  if (vmin >= 0 && vmin < vmax / 2) vmin = 0;
  const AxisTicks yt = nice_ticks(vmax - vmin > 0 ? vmax - vmin : std::max(std::abs(vmax), 1e-12), 4);
  const AxisTicks xt = nice_ticks(xmax, 6);
  const double plot_w = kWidth - kLeft - kRight, plot_h = kPanelHeight - kTop - kBottom;
  const auto px = [&](double x) { return kLeft + plot_w * x / xt.axis_max; };
  const auto py = [&](double v) { return y0 + kTop + plot_h * (1 - (v - vmin) / yt.axis_max); };
  std::string out = fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"13\" font-weight=\"bold\">{}</text>\n", kLeft,
                                y0 + 20, escape_xml(panel.title));
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>\n", kLeft,
                     y0 + kTop, plot_w, plot_h);
  for (size_t i = 0; i < yt.values.size(); ++i) {
    const double y = py(vmin + yt.values[i]);
    out += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#eee\"/>\n", kLeft, y,
                       kLeft + plot_w, y);
    const std::string label = vmin == 0 ? yt.labels[i] : fmt::format("{:.4g}", vmin + yt.values[i]);
    out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"end\">{}</text>\n", kLeft - 6,
                       y + 4, escape_xml(label));
  }
  for (size_t i = 0; i < xt.values.size(); ++i)
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>\n",
                       px(xt.values[i]), y0 + kTop + plot_h + 16, escape_xml(xt.labels[i]));
  out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">step</text>\n",
                     kLeft + plot_w / 2, y0 + kPanelHeight - 4);
  for (size_t k = 0; k < panel.series.size(); ++k) {
    const CurveSeries& s = panel.series[k];
    const char* colour = kColours[k % std::size(kColours)];
    std::string points;
    for (const auto& [x, v] : s.points)
      if (std::isfinite(v)) points += fmt::format("{:.1f},{:.1f} ", px(x), py(v));
    out += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n", colour, points);
    if (s.points.size() == 1)
      out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", px(s.points[0].first),
                         py(s.points[0].second), colour);
    const double ly = y0 + kTop + 14 + 18 * static_cast<double>(k);
    out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2\"/>\n",
                       kLeft + plot_w + 10, ly - 4, kLeft + plot_w + 28, ly - 4, colour);
    out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\">{}</text>\n", kLeft + plot_w + 32, ly,
                       escape_xml(s.name));
  }
  return out;
}

}  // namespace

std::string render_curves_svg(const std::string& title, const std::vector<CurvePanel>& panels) {
  std::vector<const CurvePanel*> drawn;
  for (const CurvePanel& p : panels) {
    bool any = false;
    for (const CurveSeries& s : p.series)
      for (const auto& point : s.points) any = any || std::isfinite(point.second);
    if (any) drawn.push_back(&p);
  }
  const double height = 30 + kPanelHeight * static_cast<double>(drawn.size());
  std::string out = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
      "width=\"{}\" height=\"{}\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"20\" font-size=\"14\">{}</text>\n",
      kWidth, height, kLeft, escape_xml(title));
  for (size_t i = 0; i < drawn.size(); ++i) out += panel_svg(*drawn[i], 30 + kPanelHeight * static_cast<double>(i));
  return out + "</svg>\n";
}

std::vector<CurvePanel> read_metrics_curves(const std::string& path) {
  // InputFile: a FIFO, /dev/zero or a folder is refused naming it (issue 48: they hung or read as empty).
  std::istringstream in(read_small_file(path, kMaxMetricsBytes, "--metrics (a file written by `ddpx train --metrics`)"));
  CurveSeries train_loss{"train loss", {}}, val_loss{"val loss", {}}, ema_loss{"val loss (EMA)", {}};
  CurveSeries lr{"lr", {}}, top1{"top-1", {}}, top5{"top-5", {}}, ema_top1{"top-1 (EMA)", {}};
  int line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    if (line.empty()) continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    DDPX_REQUIRE(j.is_object() && j.contains("kind") && j.contains("step") && j["step"].is_number(),
                 "--metrics {} line {}: not a metrics object (kind, step, ...)", path, line_number);
    const double step = j["step"].get<double>();
    // A chart spans max - min of each panel: values beyond +-1e300 (or a step beyond 1e15) would overflow it.
    DDPX_REQUIRE(std::isfinite(step) && step >= 0 && step <= 1e15,
                 "--metrics {} line {}: step {} is not a step number (0 to 1e15)", path, line_number, step);
    const auto number = [&](const char* key) -> double {
      if (!j.contains(key) || !j[key].is_number()) return NAN;
      const double value = j[key].get<double>();
      DDPX_REQUIRE(!std::isfinite(value) || std::abs(value) <= 1e300,
                   "--metrics {} line {}: {} = {} is beyond the +-1e300 a curve can be drawn over", path,
                   line_number, key, value);
      return value;
    };
    DDPX_REQUIRE(!j.contains("weights") || j["weights"].is_string(),
                 "--metrics {} line {}: 'weights' is not a string (model or ema)", path, line_number);
    if (j["kind"] == "step") {
      train_loss.points.emplace_back(step, number("loss"));
      lr.points.emplace_back(step, number("lr"));
    } else if (j["kind"] == "eval") {
      const bool ema = j.value("weights", std::string("model")) == "ema";
      (ema ? ema_loss : val_loss).points.emplace_back(step, number("loss"));
      if (ema) {
        ema_top1.points.emplace_back(step, number("top1"));
      } else {
        top1.points.emplace_back(step, number("top1"));
        top5.points.emplace_back(step, number("top5"));
      }
    }
  }
  std::vector<CurvePanel> panels = {{"loss", {train_loss, val_loss}}, {"learning rate", {lr}},
                                    {"validation accuracy (%)", {top1, top5}}};
  if (!ema_loss.points.empty()) panels[0].series.push_back(ema_loss), panels[2].series.push_back(ema_top1);
  return panels;
}

}  // namespace ddpx
