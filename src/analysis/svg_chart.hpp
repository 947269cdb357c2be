// SVG bar chart of throughput per configuration (ddpx beside PyTorch), as `ddpx bench` draws it, with an optional
// scaling view (steps/s and scaling efficiency against rank count).
// Guarantees: the output is a standalone, well-formed SVG 1.1 document (XML declaration, one <svg> root, every
// text escaped with escape_xml); horizontal bars, one group per category with one bar per series, every
// category named on its own row, each bar labelled with its value, the category note (e.g. "eff 93%") after the
// group's last bar, a legend naming each series and, when given, what the notes mean (note_legend).
// Text never runs off the picture: widths are estimated with estimate_text_width (a deliberately generous
// per-character width), the title is wrapped at spaces and shrunk when one word alone is too wide, and the
// picture is widened for the legend. Axis tick labels come from nice_ticks: round steps (1, 2 or 5 times a power
// of ten) and one number format (the same count of decimals) for every label of an axis.
// The scaling view (BarChart::scaling, drawn only when set) is a second panel with two plots against rank count:
// steps/s and scaling efficiency in percent (a dashed reference line at 100%). Each configuration is one line
// (its points joined in rank order, its own colour), named in a legend under the plots; steps/s uses a
// logarithmic axis (ticks 1, 2, 5 x 10^k) when the values span more than 20x, so a slow and a fast model both
// read.
// Missing values (std::nullopt) draw no bar and print "n/a".
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddpx {

struct ChartSeries {
  std::string name;                          // "ddpx", "PyTorch"
  std::vector<std::optional<double>> values;  // one per category, >= 0
};

// One measured row in the scaling view.
struct ScalingPoint {
  int ranks = 1;                     // GPUs (or CPU ranks), >= 1
  double steps_per_s = 0;            // >= 0
  std::optional<double> efficiency;  // fraction (0.93 for 93%), absent for 1-rank rows or without a baseline
  std::string line;                  // the configuration this point belongs to (the legend's label)
};

struct ScalingView {
  std::string rank_unit = "GPU";      // x-axis: "GPUs" / "ranks"
  std::vector<ScalingPoint> points;  // at least one
};

struct BarChart {
  std::string title;
  std::string value_label = "steps/s";
  std::vector<std::string> categories;  // configuration names
  std::vector<ChartSeries> series;      // at least one
  std::vector<std::string> notes;       // empty, or one per category (empty string for none)
  std::string note_legend;              // what the notes mean ("eff = scaling efficiency: ..."); empty for none
  std::optional<ScalingView> scaling;   // the scaling panel, drawn when set
};

// Round axis ticks from 0 to at least max_value: 0, step, 2 step, ... (at most about target + 1 labels), every
// label with the same count of decimals (enough to tell the step apart).
struct AxisTicks {
  double step = 1;
  double axis_max = 1;  // the last tick, >= max_value
  int decimals = 0;
  std::vector<double> values;
  std::vector<std::string> labels;
};
AxisTicks nice_ticks(double max_value, int target = 5);
// Round ticks covering [low, high] (low <= high, both finite): a 1-2-5 step, the first tick the largest multiple
// of it at or below low, the last the smallest at or above high, so every label is a multiple of the step (95, 96,
// ... never 93.75 or 101.8); values and labels are absolute (values[0] == labels' first number). A flat range
// [v, v] is widened by 10% of v away from zero on the side of 0 (so a flat 100% keeps 100 as its top tick), and
// [0, 0] becomes [0, 1]. axis_max is the last tick.
AxisTicks nice_range_ticks(double low, double high, int target = 5);

// Estimated width in px of text at font_size in a sans-serif font: 0.62 em per character (wider than the average
// glyph, so a fitted text is not wider than estimated in common fonts).
double estimate_text_width(std::string_view text, double font_size);

// & < > " ' replaced by their entities; control characters other than tab/newline dropped (not allowed in XML).
std::string escape_xml(std::string_view text);

// Throws ddpx::Error when there are no categories or series, a series or the notes have the wrong length, a
// value is negative or not finite, or the scaling view has no points or a rank count below 1.
std::string render_svg(const BarChart& chart);

}  // namespace ddpx
