// `ddpx report`: reads a run report written by `ddpx train --report` and prints what the run printed at its end
// (step breakdown, communication statistics, verdict), optionally against a peak table from `ddpx allreduce
// --json`, and can turn the report into a Chrome/Perfetto trace. Lets a person analyse runs from another machine.
#include <fmt/format.h>

#include <memory>
#include <vector>

#include "cli/commands.hpp"
#include "io/output_file.hpp"
#include "io/same_file.hpp"
#include "profile/comm_stats.hpp"
#include "profile/step_breakdown.hpp"
#include "profile/step_record.hpp"
#include "profile/trace_writer.hpp"
#include "profile/verdict.hpp"

namespace ddpx::cli {

Command add_report_command(CLI::App& app) {
  struct Flags {
    std::string report, peak, trace;
    bool json = false;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Analyse a saved run report (ddpx train --report FILE): breakdown, bandwidth, verdict, trace");
  cmd->add_option("report", f->report, "the JSON written by `ddpx train --report`")->required();
  cmd->add_option("--peak", f->peak, "peak bus bandwidth by size from `ddpx allreduce --json` (for % of peak)");
  cmd->add_option("--trace", f->trace, "also write a Chrome/Perfetto trace of the recorded steps here");
  cmd->add_flag("--json", f->json, "print breakdown and verdict as JSON instead of tables");
  return {cmd, [f] {
            if (!f->trace.empty()) {
              (void)check_output_path(f->trace, "--trace");
              const std::vector<FileRole> inputs = {{"report", f->report}, {"--peak", f->peak}};
              const std::vector<FileRole> outputs = {{"--trace", f->trace}};
              require_distinct_files(inputs, outputs);
            }
            const RunReport report = load_run_report(f->report);
            PeakTable peak;
            if (!f->peak.empty()) peak = load_peak_table(f->peak);
            const PeakTable* peak_ptr = peak.empty() ? nullptr : &peak;
            const StepBreakdown breakdown = summarize_steps(report);
            const Verdict verdict = diagnose(report, peak_ptr);
            if (f->json) {
              nlohmann::json j;
              to_json(j["breakdown"], breakdown);
              to_json(j["verdict"], verdict);
              fmt::print("{}\n", j.dump(1));
            } else {
              fmt::print("{}\n", format_breakdown(breakdown));
              const std::string link = report.ranks.empty() ? "" : report.ranks.front().info.transport;
              if (report.config.world > 1 || report.config.ddp)
                fmt::print("{}\n", format_comm_stats(run_comm_stats(report, peak_ptr), report.config.world, link));
              fmt::print("verdict: {}\n", verdict.text());
            }
            if (!f->trace.empty()) {
              TraceWriter trace;
              trace.add_report(report);
              trace.write(f->trace);
              fmt::print("trace: {} (open it in Perfetto or chrome://tracing)\n", f->trace);
            }
            return 0;
          }};
}

}  // namespace ddpx::cli
