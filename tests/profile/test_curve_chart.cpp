// Training curves from --metrics lines: panels, one polyline per series with the right number of points, escaped
// text, and a bad line named by number.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

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

// issue 48: hostile lines ended in "internal error ... a bug in ddpx" or an error without file and line; a FIFO hung
// and /dev/zero or a folder read as an empty file.
TEST(CurveChart, HostileMetricsFilesAreRefusedNamingFileAndLine) {
  const auto dir = std::filesystem::temp_directory_path() / ("ddpx_test_hostile_metrics_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / "m.jsonl";
  const auto with_lines = [&](const std::string& text) {
    std::ofstream(path) << R"({"kind":"step","step":1,"loss":2.0,"lr":0.1})" << "\n" << text << "\n";
    return testing::error_of([&] { render_curves_svg("t", read_metrics_curves(path.string())); });
  };
  for (const std::string& line : {std::string(R"({"kind":"eval","step":2,"loss":1,"weights":5})"),
                                  std::string(R"({"kind":"eval","step":2,"loss":1,"weights":["ema"]})")}) {
    const std::string error = with_lines(line);
    EXPECT_NE(error.find(path.string() + " line 2"), std::string::npos) << error;
    EXPECT_NE(error.find("'weights' is not a string"), std::string::npos) << error;
  }
  for (const std::string& line : {std::string(R"({"kind":"step","step":2,"loss":-1e308})"),
                                  std::string(R"({"kind":"step","step":2,"loss":1e308})")}) {
    const std::string error = with_lines(line);
    EXPECT_NE(error.find(path.string() + " line 2"), std::string::npos) << error;
    EXPECT_NE(error.find("loss = "), std::string::npos) << error;
  }
  EXPECT_NE(with_lines(R"({"kind":"step","step":1e300,"loss":1})").find("line 2: step"), std::string::npos);
  EXPECT_NE(with_lines(R"({"kind":"step","step":-3,"loss":1})").find("line 2: step"), std::string::npos);
  const std::string fifo = (dir / "fifo").string();
  ::mkfifo(fifo.c_str(), 0600);
  for (const std::string& not_a_file : {fifo, std::string("/dev/zero"), dir.string()})
    testing::expect_error([&] { read_metrics_curves(not_a_file); }, {"--metrics", not_a_file, "regular files only"});
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ddpx
