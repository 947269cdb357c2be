// One page per run: `ddpx report run.json --html page.html` writes a standalone HTML file (no scripts, no files
// beside it) with what the run was, the step breakdown as a chart and as the table `ddpx report` prints, the
// communication statistics, the verdict, each rank's median step as a chart, the training curves from --metrics
// (every attempt of a resumed run: loss, learning rate, accuracy, step time, data wait), and a link to the trace.
// Guarantees: every text from the report is escaped (escape_xml), the charts are render_svg's SVG inline, the
// verdict sits in a box of its own (class "verdict"), and the page is well-formed XHTML-compatible markup that a
// browser draws without a network. The trace link is relative to the page when both sit in one folder.
#pragma once
#include <string>

#include "analysis/step_breakdown.hpp"
#include "report/step_record.hpp"
#include "analysis/verdict.hpp"

namespace ddpx {

struct ReportPage {
  std::string title;        // "ddpx run: vit_tiny_test fp32, batch 2 x 1 rank"
  std::string provenance;   // the "run: ... command: ..." block `ddpx report` prints
  std::string breakdown;    // format_breakdown's table
  std::string comm_stats;   // format_comm_stats' table; "" without communication
  std::string trace_link;   // "" for none
  std::string curves_svg;   // render_curves_svg of the run's --metrics (analysis/curve_chart.hpp); "" for none
};

std::string report_html(const RunReport& report, const StepBreakdown& breakdown, const Verdict& verdict,
                        const ReportPage& page);

}  // namespace ddpx
