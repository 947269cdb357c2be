// SVG bar chart of throughput per configuration (ddpx beside PyTorch), as `ddpx bench` draws it.
// Guarantees: the output is a standalone, well-formed SVG 1.1 document (XML declaration, one <svg> root, every
// text escaped with escape_xml); horizontal bars, one group per category with one bar per series, every
// category named on its own row, each bar labelled with its value, the category note (e.g. "eff 93%") after the
// group's last bar, a legend naming each series. Missing values (std::nullopt) draw no bar and print "n/a".
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

struct BarChart {
  std::string title;
  std::string value_label = "steps/s";
  std::vector<std::string> categories;  // configuration names
  std::vector<ChartSeries> series;      // at least one
  std::vector<std::string> notes;       // empty, or one per category (empty string for none)
};

// & < > " ' replaced by their entities; control characters other than tab/newline dropped (not allowed in XML).
std::string escape_xml(std::string_view text);

// Throws ddpx::Error when there are no categories or series, a series or the notes have the wrong length, or a
// value is negative or not finite.
std::string render_svg(const BarChart& chart);

}  // namespace ddpx
