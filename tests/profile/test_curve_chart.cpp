// Training curves from --metrics lines: panels, one polyline per series with the right number of points, escaped
// text, and a bad line named by number.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "error_expect.hpp"
#include "profile/curve_chart.hpp"

namespace ddpx {
namespace {

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(CurveChart, DrawsLossRateAndAccuracyFromMetricsLines) {
  const auto path = std::filesystem::temp_directory_path() / "ddpx_test_curves.jsonl";
  {
    std::ofstream out(path);
    for (int step = 10; step <= 50; step += 10)
      out << R"({"kind":"step","step":)" << step << R"(,"epoch":null,"lr":)" << 0.1 / step << R"(,"loss":)"
          << 2.0 / step << R"(,"grad_norm":null,"images_per_s":100})" << "\n";
    out << R"({"kind":"eval","step":25,"epoch":0.5,"loss":0.4,"top1":81.5,"top5":99.1,"count":100,"weights":"model"})"
        << "\n";
    out << R"({"kind":"eval","step":50,"epoch":1,"loss":0.3,"top1":85.0,"top5":99.5,"count":100,"weights":"model"})"
        << "\n";
  }
  const std::vector<CurvePanel> panels = read_metrics_curves(path.string());
  ASSERT_EQ(panels.size(), 3u);
  EXPECT_EQ(panels[0].series[0].points.size(), 5u);
  EXPECT_EQ(panels[0].series[1].points.size(), 2u);
  EXPECT_DOUBLE_EQ(panels[2].series[0].points[1].second, 85.0);
  const std::string svg = render_curves_svg("curves <of> a & b", panels);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_EQ(count(svg, "<svg"), 1u);
  EXPECT_EQ(count(svg, "</svg>"), 1u);
  EXPECT_EQ(count(svg, "<polyline"), 5u);  // train + val loss, lr, top-1, top-5
  EXPECT_NE(svg.find("curves &lt;of&gt; a &amp; b"), std::string::npos);
  EXPECT_NE(svg.find("learning rate"), std::string::npos);
  {
    std::ofstream out(path, std::ios::app);
    out << "not json\n";
  }
  testing::expect_error([&] { read_metrics_curves(path.string()); }, {"line 8", "not a metrics object"});
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ddpx
