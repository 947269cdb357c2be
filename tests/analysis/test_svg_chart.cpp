// SVG chart: well-formed XML (checked by tests/xml_checker.hpp), every configuration named, escaping.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.hpp"
#include "analysis/svg_chart.hpp"
#include "xml_checker.hpp"

namespace ddpx {
namespace {

bool has_text(const testing::XmlCheck& check, const std::string& text) {
  return std::find(check.texts.begin(), check.texts.end(), text) != check.texts.end();
}

TEST(SvgChart, EscapesXmlSpecials) {
  EXPECT_EQ(escape_xml("a<b & \"c\" 'd' >"), "a&lt;b &amp; &quot;c&quot; &apos;d&apos; &gt;");
  EXPECT_EQ(escape_xml(std::string("x\x01y")), "xy");  // control characters are not allowed in XML
}

TEST(SvgChart, WellFormedWithEveryConfigurationNamed) {
  BarChart chart;
  chart.title = "ViT-L/32 <2 x H200> & friends";
  chart.categories = {"fp32, bucket 2000 MB", "bf16 hook \"25 MB\"", "powersgd:4 <SHM>"};
  chart.series = {{"ddpx", {12.5, 14.0, 9.25}}, {"PyTorch", {11.06, std::nullopt, 7.61}}};
  chart.notes = {"", "eff 93%", "eff 71%"};
  const std::string svg = render_svg(chart);
  const testing::XmlCheck check = testing::check_xml(svg);
  ASSERT_EQ(check.problem, "") << svg;
  EXPECT_EQ(check.tag_counts.at("svg"), 1);
  // Bars: 5 values present (one missing) + 2 legend swatches + background.
  EXPECT_EQ(check.tag_counts.at("rect"), 5 + 2 + 1);
  EXPECT_EQ(check.tag_counts.at("g"), 3);
  for (const std::string& category : chart.categories) EXPECT_TRUE(has_text(check, category)) << category;
  EXPECT_TRUE(has_text(check, chart.title));
  EXPECT_TRUE(has_text(check, "n/a"));    // the missing PyTorch value
  EXPECT_TRUE(has_text(check, "12.5"));   // value labels
  EXPECT_TRUE(has_text(check, "9.25"));
  EXPECT_TRUE(has_text(check, "eff 93%"));
  EXPECT_TRUE(has_text(check, "PyTorch"));
  EXPECT_TRUE(has_text(check, "steps/s"));
}

TEST(SvgChart, CheckerRejectsBrokenXml) {
  EXPECT_NE(testing::check_xml("<svg><g></svg>").problem, "");
  EXPECT_NE(testing::check_xml("<svg><text>a < b</text></svg>").problem, "");
  EXPECT_NE(testing::check_xml("<svg width=10></svg>").problem, "");
  EXPECT_NE(testing::check_xml("<svg>&nbsp;</svg>").problem, "");
  EXPECT_EQ(testing::check_xml("<svg><g a=\"1\"/></svg>").problem, "");
}

TEST(SvgChart, RejectsInconsistentInput) {
  BarChart chart;
  chart.title = "t";
  chart.categories = {"a", "b"};
  chart.series = {{"ddpx", {1.0}}};
  EXPECT_THROW(render_svg(chart), Error);  // one value for two configurations
  chart.series = {{"ddpx", {1.0, -2.0}}};
  EXPECT_THROW(render_svg(chart), Error);  // negative
  chart.series = {{"ddpx", {1.0, 2.0}}};
  chart.notes = {"x"};
  EXPECT_THROW(render_svg(chart), Error);  // one note for two configurations
  chart.notes.clear();
  EXPECT_EQ(testing::check_xml(render_svg(chart)).problem, "");
}

// The number after `name="` in the first tag that has it (the <svg> root for width/height).
double attribute(const std::string& svg, const std::string& name, size_t from = 0) {
  const size_t at = svg.find(" " + name + "=\"", from);
  EXPECT_NE(at, std::string::npos) << name;
  return std::stod(svg.substr(at + name.size() + 3));
}

// Texts of every <text> element whose class is `css_class`, with the position of each.
std::vector<std::pair<size_t, std::string>> texts_of_class(const std::string& svg, const std::string& css_class) {
  std::vector<std::pair<size_t, std::string>> out;
  const std::string open = "<text class=\"" + css_class + "\"";
  for (size_t at = svg.find(open); at != std::string::npos; at = svg.find(open, at + 1)) {
    const size_t start = svg.find('>', at) + 1;
    out.emplace_back(at, svg.substr(start, svg.find("</text>", start) - start));
  }
  return out;
}

TEST(SvgChart, LongTitleIsWrappedInsideThePicture) {
  BarChart chart;
  chart.title = "ddpx bench: steps/s per configuration (cpu (MPI ranks), batch 16 per rank, 40 steps of which 5 "
                "warm-up, train flags --model vit_small_test --precision fp32 --bucket-mb 100 --hook powersgd:2)";
  chart.categories = {"a"};
  chart.series = {{"ddpx", {1.0}}};
  const std::string svg = render_svg(chart);
  ASSERT_EQ(testing::check_xml(svg).problem, "");
  const double width = attribute(svg, "width");
  const auto lines = texts_of_class(svg, "title");
  ASSERT_GE(lines.size(), 2u) << svg;  // too long for one line at this width
  std::string joined;
  for (const auto& [at, line] : lines) {
    const double x = attribute(svg, "x", at);
    const double font = attribute(svg, "font-size", at);
    EXPECT_LE(x + estimate_text_width(line, font), width) << line;
    joined += (joined.empty() ? "" : " ") + line;
  }
  EXPECT_EQ(joined, escape_xml(chart.title));  // wrapped at spaces, nothing lost
}

TEST(SvgChart, OneUnbreakableTitleWordIsShrunkToFit) {
  BarChart chart;
  chart.title = std::string(400, 'x');
  chart.categories = {"a"};
  chart.series = {{"ddpx", {1.0}}};
  const std::string svg = render_svg(chart);
  const auto lines = texts_of_class(svg, "title");
  ASSERT_EQ(lines.size(), 1u);
  const double font = attribute(svg, "font-size", lines[0].first);
  EXPECT_LT(font, 15);
  EXPECT_LE(16 + estimate_text_width(lines[0].second, font), attribute(svg, "width") + 1e-6);
}

TEST(SvgChart, NiceTicksAreRoundWithOneFormatPerAxis) {
  const AxisTicks ticks = nice_ticks(9.13);
  EXPECT_EQ(ticks.labels, (std::vector<std::string>{"0", "2", "4", "6", "8", "10"}));
  EXPECT_DOUBLE_EQ(ticks.axis_max, 10);
  const AxisTicks small = nice_ticks(0.37);
  EXPECT_EQ(small.labels, (std::vector<std::string>{"0.0", "0.1", "0.2", "0.3", "0.4"}));
  EXPECT_EQ(nice_ticks(0).labels, (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(nice_ticks(1234).labels.back(), "1500");  // step 500: 1234 / 5 rounded up to 1, 2 or 5 x 10^k
  EXPECT_THROW(nice_ticks(-1), Error);

  // In the picture: every tick label of the bar axis has the same count of decimals.
  BarChart chart;
  chart.title = "t";
  chart.categories = {"a", "b"};
  chart.series = {{"ddpx", {0.37, 0.21}}};
  const auto labels = texts_of_class(render_svg(chart), "tick");
  ASSERT_EQ(labels.size(), 5u);
  for (const auto& [at, label] : labels) {
    (void)at;
    ASSERT_NE(label.find('.'), std::string::npos) << label;
    EXPECT_EQ(label.size() - label.find('.'), 2u) << label;  // one decimal each
  }
}

TEST(SvgChart, NoteLegendAndScalingPanelOnlyWhenGiven) {
  BarChart chart;
  chart.title = "t";
  chart.categories = {"a", "b"};
  chart.series = {{"ddpx", {2.0, 3.0}}};
  std::string svg = render_svg(chart);
  EXPECT_TRUE(texts_of_class(svg, "note-legend").empty());
  EXPECT_EQ(svg.find("id=\"scaling\""), std::string::npos);
  chart.note_legend = "eff = scaling efficiency";
  chart.scaling = ScalingView{"GPU", {{1, 2.0, std::nullopt}, {2, 3.0, 0.75}}};
  svg = render_svg(chart);
  const testing::XmlCheck check = testing::check_xml(svg);
  ASSERT_EQ(check.problem, "") << svg;
  EXPECT_TRUE(has_text(check, "eff = scaling efficiency"));
  EXPECT_NE(svg.find("id=\"scaling\""), std::string::npos);
  EXPECT_EQ(check.tag_counts.at("circle"), 3);  // two steps/s dots, one efficiency dot
  EXPECT_TRUE(has_text(check, "GPUs"));
  EXPECT_TRUE(has_text(check, "100%"));
  chart.scaling->points[0].ranks = 0;
  EXPECT_THROW(render_svg(chart), Error);
}

TEST(SvgChart, ScalingViewDrawsOneLabelledLinePerConfigurationOnALogAxisWhenSpeedsDiffer) {
  BarChart chart;
  chart.title = "t";
  chart.categories = {"a"};
  chart.series = {{"ddpx", {2.0}}};
  // A fast and a slow model: 100x apart in steps/s.
  chart.scaling = ScalingView{"GPU",
                              {{1, 400.0, std::nullopt, "vit_tiny_test fp32, hook allreduce"},
                               {2, 300.0, 0.75, "vit_tiny_test fp32, hook allreduce"},
                               {1, 4.0, std::nullopt, "vit_l_32 fp32, hook allreduce"},
                               {2, 3.6, 0.9, "vit_l_32 fp32, hook allreduce"},
                               {4, 3.2, 0.8, "vit_l_32 fp32, hook allreduce"}}};
  const std::string svg = render_svg(chart);
  const testing::XmlCheck check = testing::check_xml(svg);
  ASSERT_EQ(check.problem, "") << svg;
  EXPECT_TRUE(has_text(check, "vit_tiny_test fp32, hook allreduce")) << "legend";
  EXPECT_TRUE(has_text(check, "vit_l_32 fp32, hook allreduce")) << "legend";
  EXPECT_TRUE(has_text(check, "steps/s (log scale)"));
  EXPECT_TRUE(has_text(check, "scaling efficiency (dashed: 100%)"));  // percentages stay linear
  // Each line joined in both plots: line-0 and line-1 twice each (the tiny model's efficiency has one point).
  EXPECT_EQ(check.tag_counts.at("polyline"), 3);
  EXPECT_NE(svg.find("class=\"line-0\""), std::string::npos);
  EXPECT_NE(svg.find("class=\"line-1\""), std::string::npos);
  EXPECT_EQ(check.tag_counts.at("circle"), 5 + 3);
}

}  // namespace
}  // namespace ddpx
