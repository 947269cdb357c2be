// SVG bar chart rendering (see svg_chart.hpp).
#include "profile/svg_chart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

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

namespace {

constexpr const char* kColors[] = {"#4C78A8", "#F58518", "#54A24B", "#B279A2", "#E45756", "#72B7B2"};
constexpr double kCharWidth = 7.0;  // px per character at font-size 12 (approximate, sans-serif)
constexpr double kBarHeight = 16, kBarGap = 3, kGroupGap = 12, kTop = 64, kRight = 140, kBarArea = 520;

// A round axis maximum at or above max_value: 1, 2 or 5 times a power of ten.
double nice_max(double max_value) {
  if (max_value <= 0) return 1;
  const double magnitude = std::pow(10.0, std::floor(std::log10(max_value)));
  for (double step : {1.0, 2.0, 5.0, 10.0})
    if (step * magnitude >= max_value) return step * magnitude;
  return 10 * magnitude;
}

std::string number(double value) {
  if (value == 0) return "0";
  return value >= 100 ? fmt::format("{:.0f}", value) : value >= 10 ? fmt::format("{:.1f}", value)
                                                                    : fmt::format("{:.2f}", value);
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
  const double axis_max = nice_max(max_value);
  size_t longest = 0;
  for (const std::string& c : chart.categories) longest = std::max(longest, c.size());
  const double left = 16 + kCharWidth * static_cast<double>(longest);
  const double group_height = static_cast<double>(chart.series.size()) * (kBarHeight + kBarGap) - kBarGap;
  const double height = kTop + static_cast<double>(n) * (group_height + kGroupGap) + 40;
  const double width = left + kBarArea + kRight;

  std::string svg = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{:.0f}\" height=\"{:.0f}\" "
      "viewBox=\"0 0 {:.0f} {:.0f}\" font-family=\"sans-serif\" font-size=\"12\">\n",
      width, height, width, height);
  svg += fmt::format("<title>{}</title>\n", escape_xml(chart.title));
  svg += fmt::format("<rect x=\"0\" y=\"0\" width=\"{:.0f}\" height=\"{:.0f}\" fill=\"white\"/>\n", width, height);
  svg += fmt::format("<text x=\"{:.1f}\" y=\"22\" font-size=\"15\" font-weight=\"bold\">{}</text>\n", 16.0,
                     escape_xml(chart.title));
  // Legend.
  double legend_x = left;
  for (size_t s = 0; s < chart.series.size(); ++s) {
    svg += fmt::format("<rect x=\"{:.1f}\" y=\"32\" width=\"12\" height=\"12\" fill=\"{}\"/>\n", legend_x,
                       kColors[s % std::size(kColors)]);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"42\">{}</text>\n", legend_x + 16, escape_xml(chart.series[s].name));
    legend_x += 40 + kCharWidth * static_cast<double>(chart.series[s].name.size());
  }
  svg += fmt::format("<text x=\"{:.1f}\" y=\"42\" text-anchor=\"end\" fill=\"#555\">{}</text>\n", left + kBarArea,
                     escape_xml(chart.value_label));
  // Grid lines and labels at 0, 1/2 and the maximum, then the axis line over them.
  const double axis_bottom = height - 30;
  for (double tick : {0.0, 0.5, 1.0}) {
    const double x = left + tick * kBarArea;
    svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n", x,
                       kTop - 6, x, axis_bottom);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#555\">{}</text>\n", x,
                       axis_bottom + 16, number(tick * axis_max));
  }
  svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#333\"/>\n", left,
                     kTop - 6, left, axis_bottom);
  // Groups.
  for (size_t i = 0; i < n; ++i) {
    const double group_top = kTop + static_cast<double>(i) * (group_height + kGroupGap);
    svg += fmt::format("<g>\n<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", left - 8,
                       group_top + group_height / 2 + 4, escape_xml(chart.categories[i]));
    double label_end = left;
    for (size_t s = 0; s < chart.series.size(); ++s) {
      const double y = group_top + static_cast<double>(s) * (kBarHeight + kBarGap);
      const std::optional<double>& value = chart.series[s].values[i];
      const double bar = value ? kBarArea * *value / axis_max : 0;
      if (value)
        svg += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"/>\n", left,
                           y, bar, kBarHeight, kColors[s % std::size(kColors)]);
      const std::string label = value ? number(*value) : "n/a";
      svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", left + bar + 4, y + kBarHeight - 4,
                         escape_xml(label));
      label_end = std::max(label_end, left + bar + 4 + kCharWidth * static_cast<double>(label.size()));
    }
    if (!chart.notes.empty() && !chart.notes[i].empty())
      svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#555\">{}</text>\n", label_end + 8,
                         group_top + group_height / 2 + 4, escape_xml(chart.notes[i]));
    svg += "</g>\n";
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace ddpx
