// SVG chart: well-formed XML (checked by tests/profile/xml_checker.hpp), every configuration named, escaping.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.hpp"
#include "profile/svg_chart.hpp"
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

}  // namespace
}  // namespace ddpx
