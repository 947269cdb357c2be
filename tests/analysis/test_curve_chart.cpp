// Training curves from --metrics lines: panels, one polyline per series and attempt with the right number of
// points, escaped text, round y ticks, a bad line named by number; the same lines as CSV.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "error_expect.hpp"
#include "analysis/curve_chart.hpp"
#include "analysis/metrics_table.hpp"
#include "analysis/svg_chart.hpp"

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
  const TrainingCurves curves = read_metrics_curves(path.string());
  const std::vector<CurvePanel>& panels = curves.panels;
  ASSERT_EQ(panels.size(), 5u);  // loss, lr, accuracy, step time, data wait (these lines have neither: not drawn)
  EXPECT_EQ(panels[0].series[0].points.size(), 5u);
  EXPECT_EQ(panels[0].series[1].points.size(), 2u);
  EXPECT_DOUBLE_EQ(panels[2].series[0].points[1].second, 85.0);
  const std::string svg = render_curves_svg("curves <of> a & b", curves);
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

void write_lines(const std::filesystem::path& path, const std::vector<std::string>& lines) {
  std::ofstream out(path);
  for (const std::string& line : lines) out << line << "\n";
}

// A run stopped after step 3 and resumed from its step-2 checkpoint: both attempts are drawn, never joined.
const std::vector<std::string> kResumedRun = {
    R"({"kind":"run","step":0,"model":"m","data":"d","classes":[],"time":1700000000.5,"elapsed":0})",
    R"({"kind":"step","step":1,"epoch":null,"lr":0.1,"loss":2.5,"grad_norm":null,"images_per_s":10,"step_ms":12.5,"data_wait_ms":1.5,"time":1700000001.0,"elapsed":0.5})",
    R"({"kind":"step","step":2,"epoch":null,"lr":0.1,"loss":2.0,"grad_norm":null,"images_per_s":10,"step_ms":11,"data_wait_ms":0.5,"time":1700000002.0,"elapsed":1.5})",
    R"({"kind":"eval","step":2,"epoch":0.5,"loss":1.9,"top1":93.75,"top5":100,"count":16,"weights":"model","time":1700000002.5,"elapsed":2})",
    R"({"kind":"step","step":3,"epoch":null,"lr":0.1,"loss":1.5,"grad_norm":null,"images_per_s":10,"step_ms":10,"data_wait_ms":0.25,"time":1700000003.0,"elapsed":2.5})",
    R"({"kind":"run","step":2,"model":"m","data":"d","classes":[],"time":1700000100.0,"elapsed":0})",
    R"({"kind":"step","step":3,"epoch":null,"lr":0.1,"loss":1.6,"grad_norm":0.5,"images_per_s":10,"step_ms":13,"data_wait_ms":2,"time":1700000101.0,"elapsed":1})",
    R"({"kind":"step","step":4,"epoch":null,"lr":0.05,"loss":1.2,"grad_norm":0.5,"images_per_s":10,"step_ms":12,"data_wait_ms":1,"time":1700000102.0,"elapsed":2})",
    R"({"kind":"eval","step":4,"epoch":1,"loss":1.1,"top1":98.5,"top5":100,"count":16,"weights":"model","time":1700000102.5,"elapsed":2.5})",
};

TEST(CurveChart, EveryAttemptOfAResumedRunIsItsOwnLine) {
  const auto path = std::filesystem::temp_directory_path() / "ddpx_test_curves_resumed.jsonl";
  write_lines(path, kResumedRun);
  const TrainingCurves curves = read_metrics_curves(path.string());
  EXPECT_EQ(curves.resumed_from, std::vector<int64_t>{2});
  ASSERT_EQ(curves.panels.size(), 5u);
  EXPECT_EQ(curves.panels[3].series[0].points.size(), 5u);  // step time: every step line of both attempts
  EXPECT_EQ(curves.panels[3].series[0].attempts, (std::vector<int>{1, 1, 1, 2, 2}));
  const std::string svg = render_curves_svg("resumed", curves);
  // train loss, lr, step time, data wait: one line per attempt; val loss, top-1, top-5: all evals in attempt 1 and 2.
  EXPECT_EQ(count(svg, "<polyline"), 4u * 2 + 3u * 2);
  EXPECT_EQ(count(svg, "data-attempt=\"2\""), 7u);
  EXPECT_EQ(count(svg, "class=\"resume\""), 5u);  // the marker in every panel
  EXPECT_EQ(count(svg, "<g class=\"panel\">"), 5u);
  std::filesystem::remove(path);
}

TEST(CurveChart, AccuracyTicksAreRoundAndStopAtTheData) {
  // The accuracy panel above spans 93.75 to 100: ticks on a round step, none above 100, none like 93.75 or 101.8.
  const AxisTicks ticks = nice_range_ticks(93.75, 100, 4);
  EXPECT_EQ(ticks.labels, (std::vector<std::string>{"92", "94", "96", "98", "100"}));
  EXPECT_EQ(nice_range_ticks(0.118, 0.95, 4).labels, (std::vector<std::string>{"0.0", "0.5", "1.0"}));
  // A flat line still gets an axis, on the side of zero: a flat 100% has 100 as its top tick.
  EXPECT_EQ(nice_range_ticks(100, 100, 4).labels, (std::vector<std::string>{"90", "95", "100"}));
  EXPECT_EQ(nice_range_ticks(-2, -2, 4).labels,
            (std::vector<std::string>{"-2.00", "-1.95", "-1.90", "-1.85", "-1.80"}));
  EXPECT_EQ(nice_range_ticks(0, 0, 4).labels, (std::vector<std::string>{"0.0", "0.5", "1.0"}));
  for (const auto& [low, high] : std::vector<std::pair<double, double>>{{1e-5, 3e-3}, {-1.5, 7.25}, {12.5, 13.1}}) {
    const AxisTicks t = nice_range_ticks(low, high, 4);
    EXPECT_LE(t.values.front(), low);
    EXPECT_GE(t.values.back(), high);
    for (double v : t.values) EXPECT_NEAR(v / t.step, std::round(v / t.step), 1e-6) << low << " " << high;
  }
  const auto path = std::filesystem::temp_directory_path() / "ddpx_test_curves_ticks.jsonl";
  write_lines(path, kResumedRun);
  const std::string svg = render_curves_svg("ticks", read_metrics_curves(path.string()));
  EXPECT_EQ(svg.find(">93.75<"), std::string::npos);
  EXPECT_EQ(svg.find(">101"), std::string::npos);
  // The accuracy panel's tick labels, top last.
  const size_t panel = svg.find("validation accuracy"), end = svg.find("</g>", panel);
  std::vector<std::string> labels;
  for (size_t at = svg.find("class=\"ytick\"", panel); at < end; at = svg.find("class=\"ytick\"", at + 1)) {
    const size_t open = svg.find('>', at) + 1;
    labels.push_back(svg.substr(open, svg.find('<', open) - open));
  }
  EXPECT_EQ(labels, (std::vector<std::string>{"92", "94", "96", "98", "100"}));
  std::filesystem::remove(path);
}

TEST(MetricsTable, CsvHasOneRowPerLineWithTheAttempt) {
  const auto path = std::filesystem::temp_directory_path() / "ddpx_test_metrics_csv.jsonl";
  write_lines(path, kResumedRun);
  const std::string csv = metrics_csv(read_metrics_file(path.string()));
  std::vector<std::string> rows;
  for (size_t at = 0; at < csv.size();) {
    const size_t end = csv.find("\r\n", at);
    rows.push_back(csv.substr(at, end - at));
    at = end + 2;
  }
  ASSERT_EQ(rows.size(), 1u + 7u);  // the header, 5 step lines and 2 eval lines; "run" lines start attempts
  EXPECT_EQ(rows[0], "kind,attempt,step,epoch,time,elapsed,lr,loss,grad_norm,images_per_s,step_ms,data_wait_ms,top1,"
                     "top5,count,weights");
  EXPECT_EQ(rows[1], "step,1,1,,1700000001,0.5,0.1,2.5,,10,12.5,1.5,,,,");
  EXPECT_EQ(rows[3], "eval,1,2,0.5,1700000002.5,2,,1.9,,,,,93.75,100,16,model");
  EXPECT_EQ(rows[5], "step,2,3,,1700000101,1,0.1,1.6,0.5,10,13,2,,,,");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ddpx
