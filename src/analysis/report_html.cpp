// The run's HTML page (see report_html.hpp).
#include "analysis/report_html.hpp"

#include <fmt/format.h>

#include <vector>

#include "analysis/svg_chart.hpp"

namespace ddpx {
namespace {

// The breakdown's phases a reader compares, median over ranks, in ms.
BarChart phase_chart(const StepBreakdown& breakdown) {
  BarChart chart;
  chart.title = "Where a step goes (median over ranks, ms)";
  chart.value_label = "ms";
  ChartSeries median{"median ms", {}};
  for (const Phase phase : {Phase::data_wait, Phase::h2d_copy, Phase::forward, Phase::backward, Phase::exposed_comm,
                            Phase::optimizer, Phase::total}) {
    chart.categories.emplace_back(phase_name(phase));
    median.values.push_back(breakdown[phase].median);
  }
  chart.series.push_back(std::move(median));
  return chart;
}

BarChart rank_chart(const StepBreakdown& breakdown) {
  BarChart chart;
  chart.title = "Median step per rank (ms)";
  chart.value_label = "ms";
  ChartSeries step{"step ms", {}};
  for (const RankBreakdown& rank : breakdown.ranks) {
    chart.categories.push_back(fmt::format("rank {}{}", rank.rank, rank.rank == breakdown.straggler_rank ? " (slowest)" : ""));
    step.values.push_back(rank[Phase::total].median);
  }
  chart.series.push_back(std::move(step));
  return chart;
}

// An SVG document as an inline element: without its XML declaration.
std::string inline_svg(const std::string& svg) {
  const size_t root = svg.find("<svg");
  return root == std::string::npos ? svg : svg.substr(root);
}

std::string pre(const std::string& text) { return "<pre>" + escape_xml(text) + "</pre>\n"; }

}  // namespace

std::string report_html(const RunReport& report, const StepBreakdown& breakdown, const Verdict& verdict,
                        const ReportPage& page) {
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>" + escape_xml(page.title) +
      "</title>\n<style>\n"
      "body { font-family: sans-serif; margin: 24px; max-width: 1100px; color: #222; }\n"
      "pre { background: #f6f6f6; padding: 10px; overflow-x: auto; font-size: 12px; }\n"
      ".verdict { background: #fff4e5; border-left: 6px solid #f58518; padding: 12px 16px; font-size: 15px; }\n"
      ".charts svg { display: block; margin: 12px 0; }\n"
      "</style>\n</head>\n<body>\n";
  html += "<h1>" + escape_xml(page.title) + "</h1>\n";
  html += fmt::format("<p>{:.2f} steps/s, {:.1f} images/s; {} rank(s); {} measured steps on rank 0.</p>\n",
                      breakdown.steps_per_s, breakdown.images_per_s, report.config.world,
                      report.ranks.empty() ? 0 : report.ranks.front().steps.size());
  html += "<h2>Verdict</h2>\n<div class=\"verdict\">" + escape_xml(verdict.text()) + "</div>\n";
  html += "<h2>Where the time goes</h2>\n<div class=\"charts\">\n" + inline_svg(render_svg(phase_chart(breakdown)));
  if (breakdown.ranks.size() > 1) html += inline_svg(render_svg(rank_chart(breakdown)));
  html += "</div>\n" + pre(page.breakdown);
  if (!page.curves_svg.empty())
    html += "<h2>Training curves</h2>\n<div class=\"charts\">\n" + inline_svg(page.curves_svg) + "</div>\n";
  if (!page.comm_stats.empty()) html += "<h2>Communication</h2>\n" + pre(page.comm_stats);
  html += "<h2>The run</h2>\n" + pre(page.provenance);
  if (!page.trace_link.empty())
    html += "<h2>Trace</h2>\n<p><a href=\"" + escape_xml(page.trace_link) + "\">" + escape_xml(page.trace_link) +
            "</a>: open it in <a href=\"https://ui.perfetto.dev\">Perfetto</a> or chrome://tracing.</p>\n";
  return html + "</body>\n</html>\n";
}

}  // namespace ddpx
