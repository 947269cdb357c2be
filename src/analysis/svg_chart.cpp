// SVG bar chart rendering (see svg_chart.hpp).
#include "analysis/svg_chart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/error.hpp"

namespace ddpx {

std::string escape_xml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t' && ch != '\n') break;
        out += ch;
    }
  }
  return out;
}

double estimate_text_width(std::string_view text, double font_size) {
  size_t characters = 0;
  for (char ch : text)
    if ((static_cast<unsigned char>(ch) & 0xC0) != 0x80) ++characters;  // count UTF-8 code points, not bytes
  return 0.62 * font_size * static_cast<double>(characters);
}

AxisTicks nice_ticks(double max_value, int target) {
  DDPX_REQUIRE(std::isfinite(max_value) && max_value >= 0, "axis ticks: maximum must be finite and >= 0, got {}",
               max_value);
  DDPX_REQUIRE(target >= 1, "axis ticks: target tick count must be >= 1, got {}", target);
  AxisTicks ticks;
  if (max_value > 0) {
    const double raw = max_value / target;
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    ticks.step = 10 * magnitude;
    for (double m : {1.0, 2.0, 5.0})
      if (m * magnitude >= raw) {
        ticks.step = m * magnitude;
        break;
      }
    ticks.decimals = std::max(0, -static_cast<int>(std::floor(std::log10(ticks.step) + 1e-9)));
  }
  const int count = std::max(1, static_cast<int>(std::ceil(max_value / ticks.step - 1e-9)));
  ticks.axis_max = count * ticks.step;
  for (int i = 0; i <= count; ++i) {
    ticks.values.push_back(i * ticks.step);
    ticks.labels.push_back(fmt::format("{:.{}f}", i * ticks.step, ticks.decimals));
  }
  return ticks;
}

AxisTicks nice_range_ticks(double low, double high, int target) {
  DDPX_REQUIRE(std::isfinite(low) && std::isfinite(high) && low <= high,
               "axis ticks: the range must be finite and ordered, got [{}, {}]", low, high);
  DDPX_REQUIRE(target >= 1, "axis ticks: target tick count must be >= 1, got {}", target);
  // A flat line gets an axis below a positive value (100% stays the top tick), above a negative one, [0, 1] at 0.
  if (high == low) {
    const double pad = high != 0 ? std::abs(high) * 0.1 : 1.0;
    (high > 0 ? low : high) += high > 0 ? -pad : pad;
  }
  const double span = high - low;
  const double raw = span / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  AxisTicks ticks;
  ticks.step = 10 * magnitude;
  for (double m : {1.0, 2.0, 5.0})
    if (m * magnitude >= raw * (1 - 1e-9)) {
      ticks.step = m * magnitude;
      break;
    }
  ticks.decimals = std::max(0, -static_cast<int>(std::floor(std::log10(ticks.step) + 1e-9)));
  // Multiples of the step as integers, so 0.1-steps print 0.3, not 0.30000000000000004.
  const int64_t first = static_cast<int64_t>(std::floor(low / ticks.step + 1e-9));
  int64_t last = static_cast<int64_t>(std::ceil(high / ticks.step - 1e-9));
  if (last == first) ++last;
  for (int64_t k = first; k <= last; ++k) {
    ticks.values.push_back(static_cast<double>(k) * ticks.step);
    ticks.labels.push_back(fmt::format("{:.{}f}", static_cast<double>(k) * ticks.step, ticks.decimals));
  }
  ticks.axis_max = ticks.values.back();
  return ticks;
}

namespace {

constexpr const char* kColors[] = {"#4C78A8", "#F58518", "#54A24B", "#B279A2", "#E45756", "#72B7B2"};
constexpr double kFont = 12, kTitleFont = 15, kMargin = 16;
constexpr double kBarHeight = 16, kBarGap = 3, kGroupGap = 12, kRight = 140, kBarArea = 520;
constexpr double kPlotHeight = 170, kPlotGap = 70;

std::string number(double value) {
  if (value == 0) return "0";
  return value >= 100 ? fmt::format("{:.0f}", value) : value >= 10 ? fmt::format("{:.1f}", value)
                                                                    : fmt::format("{:.2f}", value);
}

// Words of text in lines no wider than max_width at font_size (a single word wider than that gets its own line).
std::vector<std::string> wrap_words(const std::string& text, double max_width, double font_size) {
  std::vector<std::string> lines;
  std::string line;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    const std::string joined = line.empty() ? word : line + " " + word;
    if (!line.empty() && estimate_text_width(joined, font_size) > max_width) {
      lines.push_back(line);
      line = word;
    } else {
      line = joined;
    }
    start = end + 1;
  }
  if (!line.empty() || lines.empty()) lines.push_back(line);
  return lines;
}

struct PlotPoint {
  int ranks;
  double value;
  size_t line;  // index into the view's lines
};

// Log-scale ticks 1, 2, 5 x 10^k covering [low, high] (both > 0).
std::vector<double> log_ticks(double low, double high) {
  std::vector<double> ticks;
  for (double decade = std::pow(10.0, std::floor(std::log10(low))); decade <= high * 10; decade *= 10)
    for (const double m : {1.0, 2.0, 5.0})
      if (m * decade >= low / 1.0001 && m * decade <= high * 1.0001) ticks.push_back(m * decade);
  return ticks;
}

// One plot against rank count in the box (x, y, w, h): y ticks (round steps, or 1-2-5 on a log axis when the
// values span more than 20x), rank counts evenly spaced on x, each line's points joined in rank order in its own
// colour, an optional dashed reference at `reference`.
std::string line_plot(double x, double y, double w, double h, const std::string& heading, const std::string& rank_unit,
                      const std::vector<PlotPoint>& points, const std::string& suffix, std::optional<double> reference,
                      bool allow_log) {
  double max_value = reference.value_or(0), min_positive = reference.value_or(0);
  std::set<int> ranks;
  for (const PlotPoint& p : points) {
    max_value = std::max(max_value, p.value);
    if (p.value > 0) min_positive = min_positive > 0 ? std::min(min_positive, p.value) : p.value;
    ranks.insert(p.ranks);
  }
  const bool log_axis = allow_log && min_positive > 0 && max_value / min_positive > 20;
  std::vector<double> tick_values;
  std::vector<std::string> tick_labels;
  double axis_min = 0, axis_max = 1;
  if (log_axis) {
    tick_values = log_ticks(min_positive, max_value);
    axis_min = std::min(tick_values.front(), min_positive);
    axis_max = std::max(tick_values.back(), max_value);
    for (double v : tick_values) tick_labels.push_back(number(v));
  } else {
    const AxisTicks ticks = nice_ticks(max_value, 4);
    tick_values = ticks.values, tick_labels = ticks.labels, axis_max = ticks.axis_max;
  }
  std::map<int, double> x_of;
  size_t index = 0;
  for (const int r : ranks) x_of[r] = x + w * (static_cast<double>(index++) + 0.5) / static_cast<double>(ranks.size());
  auto y_of = [&](double value) {
    if (!log_axis) return y + h - h * value / axis_max;
    const double v = std::max(value, axis_min);
    return y + h - h * (std::log(v) - std::log(axis_min)) / (std::log(axis_max) - std::log(axis_min));
  };
  std::string svg = fmt::format("<g class=\"plot\">\n<text x=\"{:.1f}\" y=\"{:.1f}\" font-weight=\"bold\">{}{}</text>\n",
                                x, y - 12, escape_xml(heading), log_axis ? " (log scale)" : "");
  for (size_t i = 0; i < tick_values.size(); ++i) {
    const double ty = y_of(tick_values[i]);
    svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n", x, ty,
                       x + w, ty);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"#555\">{}</text>\n", x - 6, ty + 4,
                       escape_xml(tick_labels[i] + suffix));
  }
  svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#333\"/>\n", x, y, x,
                     y + h);
  svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#333\"/>\n", x, y + h,
                     x + w, y + h);
  if (reference)
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#888\" stroke-dasharray=\"4 3\"/>\n", x,
        y_of(*reference), x + w, y_of(*reference));
  for (const auto& [r, px] : x_of)
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#555\">{}</text>\n", px,
                       y + h + 16, r);
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#555\">{}</text>\n", x + w / 2,
                     y + h + 34, escape_xml(rank_unit));
  std::map<size_t, std::map<int, double>> by_line;
  for (const PlotPoint& p : points) by_line[p.line][p.ranks] = p.value;
  for (const auto& [line, line_points] : by_line) {
    const char* color = kColors[line % std::size(kColors)];
    if (line_points.size() > 1) {
      std::string path;
      for (const auto& [r, value] : line_points) path += fmt::format("{:.1f},{:.1f} ", x_of[r], y_of(value));
      path.pop_back();
      svg += fmt::format("<polyline class=\"line-{}\" points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n",
                         line, path, color);
    }
    for (const auto& [r, value] : line_points)
      svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"/>\n", x_of[r], y_of(value), color);
  }
  return svg + "</g>\n";
}

}  // namespace

std::string render_svg(const BarChart& chart) {
  const size_t n = chart.categories.size();
  DDPX_REQUIRE(n > 0, "bar chart '{}': no configurations to draw", chart.title);
  DDPX_REQUIRE(!chart.series.empty(), "bar chart '{}': no series to draw", chart.title);
  DDPX_REQUIRE(chart.notes.empty() || chart.notes.size() == n,
               "bar chart '{}': {} notes for {} configurations; give one per configuration or none", chart.title,
               chart.notes.size(), n);
  double max_value = 0;
  for (const ChartSeries& s : chart.series) {
    DDPX_REQUIRE(s.values.size() == n, "bar chart '{}': series '{}' has {} values for {} configurations",
                 chart.title, s.name, s.values.size(), n);
    for (size_t i = 0; i < n; ++i)
      if (s.values[i]) {
        DDPX_REQUIRE(std::isfinite(*s.values[i]) && *s.values[i] >= 0,
                     "bar chart '{}': series '{}' value for '{}' must be finite and >= 0, got {}", chart.title,
                     s.name, chart.categories[i], *s.values[i]);
        max_value = std::max(max_value, *s.values[i]);
      }
  }
  if (chart.scaling) {
    DDPX_REQUIRE(!chart.scaling->points.empty(), "bar chart '{}': the scaling view has no points", chart.title);
    for (const ScalingPoint& p : chart.scaling->points)
      DDPX_REQUIRE(p.ranks >= 1 && std::isfinite(p.steps_per_s) && p.steps_per_s >= 0 &&
                       (!p.efficiency || (std::isfinite(*p.efficiency) && *p.efficiency >= 0)),
                   "bar chart '{}': scaling point at {} ranks needs ranks >= 1 and finite values >= 0 (steps/s {})",
                   chart.title, p.ranks, p.steps_per_s);
  }
  const AxisTicks ticks = nice_ticks(max_value);
  double longest = 0;
  for (const std::string& c : chart.categories) longest = std::max(longest, estimate_text_width(c, kFont));
  const double left = kMargin + 8 + longest;
  double legend_width = 0;
  for (const ChartSeries& s : chart.series) legend_width += 40 + estimate_text_width(s.name, kFont);
  legend_width += 16 + estimate_text_width(chart.value_label, kFont);
  double width = std::max({left + kBarArea + kRight, left + legend_width + kMargin,
                           2 * kMargin + estimate_text_width(chart.note_legend, kFont)});
  if (chart.scaling) {
    width = std::max(width, 2 * (kPlotGap + 200) + kMargin);
    for (const ScalingPoint& p : chart.scaling->points)
      width = std::max(width, 2 * kMargin + 30 + estimate_text_width(p.line, kFont));
  }

  // Title: wrapped at spaces to the picture's width, shrunk when its widest line (one long word) still overflows.
  const double title_room = width - 2 * kMargin;
  double title_font = kTitleFont;
  const std::vector<std::string> title_lines = wrap_words(chart.title, title_room, title_font);
  for (const std::string& line : title_lines)
    title_font = std::min(title_font, title_font * title_room / std::max(1.0, estimate_text_width(line, title_font)));
  const double title_line_height = std::ceil(title_font * 1.3);
  const double legend_y = 14 + title_line_height * static_cast<double>(title_lines.size());
  const double note_legend_y = legend_y + 20;
  const double top = (chart.note_legend.empty() ? legend_y : note_legend_y) + 28;

  const double group_height = static_cast<double>(chart.series.size()) * (kBarHeight + kBarGap) - kBarGap;
  const double axis_bottom = top + static_cast<double>(n) * (group_height + kGroupGap);
  const double scaling_top = axis_bottom + 64;
  std::vector<std::string> lines;  // the scaling view's configurations, in order of first appearance
  if (chart.scaling)
    for (const ScalingPoint& p : chart.scaling->points)
      if (std::find(lines.begin(), lines.end(), p.line) == lines.end()) lines.push_back(p.line);
  const double height = chart.scaling ? scaling_top + 30 + kPlotHeight + 56 + 18 * static_cast<double>(lines.size())
                                      : axis_bottom + 30;

  std::string svg = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{:.0f}\" height=\"{:.0f}\" "
      "viewBox=\"0 0 {:.0f} {:.0f}\" font-family=\"sans-serif\" font-size=\"12\">\n",
      width, height, width, height);
  svg += fmt::format("<title>{}</title>\n", escape_xml(chart.title));
  svg += fmt::format("<rect x=\"0\" y=\"0\" width=\"{:.0f}\" height=\"{:.0f}\" fill=\"white\"/>\n", width, height);
  for (size_t i = 0; i < title_lines.size(); ++i)
    svg += fmt::format("<text class=\"title\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"{:.1f}\" font-weight=\"bold\">{}</text>\n",
                       kMargin, title_line_height * static_cast<double>(i + 1), title_font,
                       escape_xml(title_lines[i]));
  // Legend: the series, then what the notes mean.
  double legend_x = left;
  for (size_t s = 0; s < chart.series.size(); ++s) {
    svg += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"12\" height=\"12\" fill=\"{}\"/>\n", legend_x,
                       legend_y - 10, kColors[s % std::size(kColors)]);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", legend_x + 16, legend_y,
                       escape_xml(chart.series[s].name));
    legend_x += 40 + estimate_text_width(chart.series[s].name, kFont);
  }
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"#555\">{}</text>\n",
                     std::max(left + kBarArea, legend_x + 16 + estimate_text_width(chart.value_label, kFont)),
                     legend_y, escape_xml(chart.value_label));
  if (!chart.note_legend.empty())
    svg += fmt::format("<text class=\"note-legend\" x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#555\">{}</text>\n", kMargin,
                       note_legend_y, escape_xml(chart.note_legend));
  // Grid lines and round tick labels (one format), then the axis line over them.
  for (size_t t = 0; t < ticks.values.size(); ++t) {
    const double x = left + kBarArea * ticks.values[t] / ticks.axis_max;
    svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n", x, top - 6,
                       x, axis_bottom);
    svg += fmt::format("<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#555\">{}</text>\n",
                       x, axis_bottom + 16, ticks.labels[t]);
  }
  svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#333\"/>\n", left, top - 6,
                     left, axis_bottom);
  // Groups.
  for (size_t i = 0; i < n; ++i) {
    const double group_top = top + static_cast<double>(i) * (group_height + kGroupGap);
    svg += fmt::format("<g>\n<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", left - 8,
                       group_top + group_height / 2 + 4, escape_xml(chart.categories[i]));
    double label_end = left;
    for (size_t s = 0; s < chart.series.size(); ++s) {
      const double y = group_top + static_cast<double>(s) * (kBarHeight + kBarGap);
      const std::optional<double>& value = chart.series[s].values[i];
      const double bar = value ? kBarArea * *value / ticks.axis_max : 0;
      if (value)
        svg += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"/>\n", left,
                           y, bar, kBarHeight, kColors[s % std::size(kColors)]);
      const std::string label = value ? number(*value) : "n/a";
      svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", left + bar + 4, y + kBarHeight - 4,
                         escape_xml(label));
      label_end = std::max(label_end, left + bar + 4 + estimate_text_width(label, kFont));
    }
    if (!chart.notes.empty() && !chart.notes[i].empty())
      svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#555\">{}</text>\n", label_end + 8,
                         group_top + group_height / 2 + 4, escape_xml(chart.notes[i]));
    svg += "</g>\n";
  }
  if (chart.scaling) {
    const ScalingView& view = *chart.scaling;
    std::vector<PlotPoint> throughput, efficiency;
    for (const ScalingPoint& p : view.points) {
      const size_t line = static_cast<size_t>(
          std::find(lines.begin(), lines.end(), p.line) - lines.begin());
      throughput.push_back({p.ranks, p.steps_per_s, line});
      if (p.efficiency) efficiency.push_back({p.ranks, 100 * *p.efficiency, line});
    }
    const double plot_width = (width - 2 * kPlotGap - 2 * kMargin) / 2;
    const std::string unit = view.rank_unit + "s";
    svg += fmt::format("<g id=\"scaling\">\n<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"14\" font-weight=\"bold\">"
                       "Scaling against {} count</text>\n",
                       kMargin, scaling_top - 8, escape_xml(view.rank_unit));
    svg += line_plot(kPlotGap, scaling_top + 30, plot_width, kPlotHeight, "steps/s", unit, throughput, "",
                     std::nullopt, /*allow_log=*/true);
    svg += line_plot(2 * kPlotGap + plot_width, scaling_top + 30, plot_width, kPlotHeight,
                     "scaling efficiency (dashed: 100%)", unit, efficiency, "%", 100.0, /*allow_log=*/false);
    // The legend: one swatch and name per line, one line of the legend each.
    const double legend_top = scaling_top + 30 + kPlotHeight + 56;
    svg += "<g id=\"scaling-legend\">\n";
    for (size_t i = 0; i < lines.size(); ++i) {
      const double ly = legend_top + 18 * static_cast<double>(i);
      svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"3\"/>"
                         "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
                         kMargin, ly - 4, kMargin + 24, ly - 4, kColors[i % std::size(kColors)], kMargin + 30, ly,
                         escape_xml(lines[i].empty() ? "ddpx" : lines[i]));
    }
    svg += "</g>\n</g>\n";
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace ddpx
