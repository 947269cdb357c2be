// `ddpx report`: reads a run report written by `ddpx train --report` and prints what the run printed at its end
// (step breakdown, communication statistics, verdict), optionally against a peak table from `ddpx allreduce
// --json`, and can turn the report into a Chrome/Perfetto trace. Lets a person analyse runs from another machine.
// The tables follow a "what made this run" block (version, commit, start, host, command line, optimizer) and rank
// 0's loss curve (first and last logged values); fields an older report lacks read "not recorded".
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
namespace {

std::string or_not_recorded(const std::string& text) { return text.empty() ? "not recorded" : text; }

std::string provenance_block(const RunReport& report) {
  const RunConfig& c = report.config;
  std::string command;
  for (const std::string& arg : c.command_line) command += (command.empty() ? "" : " ") + arg;
  const std::string host = report.ranks.empty() ? "" : report.ranks.front().info.host;
  std::string text = fmt::format(
      "run: ddpx {} (commit {}), started {}, host {}\n"
      "command: {}\n"
      "optimizer: {}\n",
      or_not_recorded(c.ddpx_version), or_not_recorded(c.ddpx_commit), or_not_recorded(c.started_utc),
      or_not_recorded(host), command.empty() ? "not recorded (run_training() or an older report)" : command,
      c.optimizer.text());
  const bool have_losses = !report.ranks.empty() && !report.ranks.front().losses.empty();
  if (!have_losses) {
    text += "loss: not recorded\n";
  } else {
    const std::vector<LossPoint>& losses = report.ranks.front().losses;
    text += fmt::format("loss (rank 0, {} logged steps): step {} {:.4f} -> step {} {:.4f}\n", losses.size(),
                        losses.front().step, losses.front().loss, losses.back().step, losses.back().loss);
  }
  if (report.throughput)
    text += fmt::format("throughput: {:.2f} steps/s, {:.1f} images/s\n", report.throughput->steps_per_s,
                        report.throughput->images_per_s);
  return text;
}

}  // namespace

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
              fmt::print("{}\n", provenance_block(report));
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
