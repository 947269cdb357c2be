// `ddpx report`: reads a run report written by `ddpx train --report` and prints what the run printed at its end
// (step breakdown, communication statistics, verdict), optionally against a peak table from `ddpx allreduce
// --json`, and can turn the report into a Chrome/Perfetto trace. Lets a person analyse runs from another machine.
// The tables follow a "what made this run" block (version, commit, start, host, command line, optimizer) and rank
// 0's loss curve (first and last logged values); fields an older report lacks read "not recorded".
// --check-trace FILE checks a Chrome/Perfetto trace (analysis/trace_check.hpp): with or without a report, it prints
// what it found and the command exits 1 when the trace has problems (2 when it cannot be read).
// --metrics FILE (a `ddpx train --metrics` file, every attempt of a resumed run) is drawn as curves (--curves SVG,
// and in the --html page beside a run report) and tabulated for spreadsheets (--csv); analysis/curve_chart.hpp,
// analysis/metrics_table.hpp.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "io/output_file.hpp"
#include "io/same_file.hpp"
#include "model/model_registry.hpp"
#include "analysis/comm_stats.hpp"
#include "analysis/curve_chart.hpp"
#include "analysis/metrics_table.hpp"
#include "analysis/report_html.hpp"
#include "analysis/step_breakdown.hpp"
#include "report/step_record.hpp"
#include "analysis/torch_trace.hpp"
#include "analysis/trace_check.hpp"
#include "analysis/trace_writer.hpp"
#include "analysis/verdict.hpp"

namespace ddpx::cli {
namespace {

std::string or_not_recorded(const std::string& text) { return text.empty() ? "not recorded" : text; }

// Each rank's measured clock offset to rank 0 (Note [One clock for all ranks]); the first 8 ranks, then the
// largest uncertainty of all. Nothing for a single rank.
std::string clock_line(const RunReport& report) {
  if (report.ranks.size() < 2) return "";
  std::string offsets;
  double widest = 0;
  bool recorded = true;
  for (size_t i = 1; i < report.ranks.size(); ++i) {
    const std::optional<ClockAlignment>& clock = report.ranks[i].info.clock;
    if (!clock) {
      recorded = false;
      break;
    }
    widest = std::max(widest, clock->uncertainty_ms);
    if (i <= 8)
      offsets += fmt::format("{}rank {} {:+.3f} +- {:.3f} ms", i == 1 ? "" : ", ", i, clock->offset_ms,
                             clock->uncertainty_ms);
  }
  if (!recorded) return "clock: offsets to rank 0 not recorded (older report): ranks may not line up in a trace\n";
  if (report.ranks.size() > 9) offsets += fmt::format(", ... (largest uncertainty {:.3f} ms)", widest);
  return fmt::format("clock: every rank on rank 0's clock; offsets to it: {}\n", offsets);
}

// The training data's class names (label = index), the first 10 of them.
std::string classes_line(const std::vector<std::string>& classes) {
  if (classes.empty()) return "";
  std::string names;
  for (size_t k = 0; k < classes.size() && k < 10; ++k)
    names += fmt::format("{}{} {}", k == 0 ? "" : ", ", k, classes[k]);
  if (classes.size() > 10) names += fmt::format(", ... ({} more)", classes.size() - 10);
  return fmt::format("classes: {} ({})\n", classes.size(), names);
}

// A resumed run's attempts: "attempts: 2 (steps 1-20: stopped; ..., steps 21-40: finished)"; nothing for a run of one.
std::string attempts_line(const std::vector<RunAttempt>& attempts) {
  if (attempts.size() < 2) return "";
  std::string text = fmt::format("attempts: {}", attempts.size());
  for (size_t k = 0; k < attempts.size(); ++k)
    text += fmt::format("{}steps {}-{}: {}", k == 0 ? " (" : "; ", attempts[k].start_step + 1, attempts[k].end_step,
                        attempts[k].reason);
  return text + ")\n";
}

// Every --val evaluation, one row each (nccl-tests' shape: a header, then the rows). Top-5 only where the model has
// more than 5 classes (with 5 or fewer every sample is a top-5 hit), as train and eval print it; `classes` 0: unknown.
std::string evaluation_table(const std::vector<EvalPoint>& evaluations, int64_t classes) {
  if (evaluations.empty()) return "";
  const bool top5 = classes == 0 || classes > 5;
  std::string text = fmt::format("evaluation on --val ({} images):\n{:>8} {:>8} {:>8} {:>10} {:>8}{}\n",
                                 evaluations.front().count, "step", "epoch", "weights", "val loss", "top-1",
                                 top5 ? fmt::format(" {:>8}", "top-5") : "");
  for (const EvalPoint& e : evaluations)
    text += fmt::format("{:>8} {:>8} {:>8} {:>10.4f} {:>7.2f}%{}\n", e.step,
                        e.epoch ? fmt::format("{:.2f}", *e.epoch) : "-", e.weights, e.loss, e.top1,
                        top5 ? fmt::format(" {:>7.2f}%", e.top5) : "");
  return text;
}

// The report's model's class count: its data's class names, else the model spec's; 0 when neither says.
int64_t report_classes(const RunReport& report) {
  if (!report.config.classes.empty()) return static_cast<int64_t>(report.config.classes.size());
  try {
    return make_model(report.config.model)->num_classes();
  } catch (const Error&) {
    return 0;  // a model of another ddpx: the table keeps every column
  }
}

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
  text += classes_line(c.classes);
  text += attempts_line(report.attempts);
  text += evaluation_table(report.evaluations, report_classes(report));
  text += clock_line(report);
  return text;
}

// Checks a trace file and prints the verdict; 0 when it is fine, 1 when not.
int check_trace_command(const std::string& path) {
  const TraceCheck check = check_trace_file(path);
  if (check.ok()) {
    fmt::print("trace {}: {} slices on {} tracks of {} process{}: every track well nested, in time order\n", path,
               check.slices, check.tracks, check.processes, check.processes == 1 ? "" : "es");
    return 0;
  }
  constexpr size_t kShown = 50;
  fmt::print("trace {}: {} problem{} ({} slices on {} tracks):\n", path, check.problems.size(),
             check.problems.size() == 1 ? "" : "s", check.slices, check.tracks);
  for (size_t i = 0; i < check.problems.size() && i < kShown; ++i) fmt::print("  {}\n", check.problems[i]);
  if (check.problems.size() > kShown) fmt::print("  ... and {} more\n", check.problems.size() - kShown);
  return 1;
}

}  // namespace

Command add_report_command(CLI::App* cmd) {
  struct Flags {
    std::string report, peak, trace, check_trace, metrics, curves, html, csv;
    bool json = false;
    std::vector<std::string> torch_profile;
    int64_t torch_batch = 1, torch_gradients = 0;
    std::string one_rank_report;
  };
  const auto f = command_flags<Flags>(cmd, HelpDefaults::per_flag);
  cmd->add_option("report", f->report, "the JSON written by `ddpx train --report` (optional with --check-trace)");
  cmd->add_option("--peak", f->peak, "peak bus bandwidth by size from `ddpx allreduce --json` (for % of peak)");
  cmd->add_option("--trace", f->trace, "also write a Chrome/Perfetto trace of the recorded steps here");
  cmd->add_flag("--json", f->json, "print breakdown and verdict as JSON instead of tables");
  cmd->add_option("--html", f->html,
                  "also write the run as one HTML page: verdict, breakdown chart and table, communication, each "
                  "rank's step, what made the run, a link to --trace's file, and with --metrics the training curves");
  cmd->add_option("--check-trace", f->check_trace,
                  "check a Chrome/Perfetto trace (from --trace): every track well nested (no partly overlapping "
                  "slices), in time order, steps in order; exits 1 when it is not (runs after --trace, so it can "
                  "check the trace just written)");
  cmd->add_option("--metrics", f->metrics,
                  "a `ddpx train --metrics` file, every attempt of a resumed run: draw its curves (loss, learning "
                  "rate, validation top-1/top-5, step time, data wait) into --curves OUT.svg, into the --html page "
                  "with a run report, and/or tabulate it with --csv");
  cmd->add_option("--curves", f->curves,
                  "the SVG --metrics draws (default, when --metrics is given alone: the metrics file with .svg)");
  cmd->add_option("--csv", f->csv,
                  "write --metrics as CSV for a spreadsheet: one row per step or eval line (kind, attempt, step, "
                  "epoch, time, elapsed, lr, loss, grad_norm, images_per_s, step_ms, data_wait_ms, top1, top5, "
                  "count, weights)");
  cmd->add_option("--torch-profile", f->torch_profile,
                  "analyse a PyTorch DDP run instead: its torch.profiler Chrome traces, one per rank "
                  "(export_chrome_trace; Kineto's or the legacy profiler's), with prof.step() every iteration")
      ->expected(1, -1);
  cmd->add_option("--torch-batch", f->torch_batch, "with --torch-profile: images per rank per step (default 1)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--one-rank-report", f->one_rank_report,
                  "with --torch-profile: also write the one-rank report `ddpx predict` takes (the fastest rank's "
                  "steps without their exposed communication); needs --torch-gradients");
  cmd->add_option("--torch-gradients", f->torch_gradients,
                  "with --one-rank-report: the model's gradient elements, sum(p.numel() for p in "
                  "model.parameters() if p.requires_grad)")
      ->check(CLI::PositiveNumber);
  return {cmd, [f] {
            DDPX_REQUIRE(f->curves.empty() || !f->metrics.empty(),
                         "ddpx report --curves needs --metrics FILE (from `ddpx train --metrics`)");
            DDPX_REQUIRE(f->csv.empty() || !f->metrics.empty(),
                         "ddpx report --csv needs --metrics FILE (from `ddpx train --metrics`)");
            const bool metrics_alone = f->report.empty() && f->torch_profile.empty() && f->check_trace.empty();
            if (!f->metrics.empty()) {
              DDPX_REQUIRE(!metrics_alone || (f->html.empty() && f->trace.empty() && f->peak.empty() && !f->json),
                           "ddpx report --metrics: --html, --trace, --peak and --json need the run report too "
                           "(ddpx report run.json --metrics {} --html page.html)", f->metrics);
              // The curves SVG: where --curves says, or beside the metrics when nothing else was asked for.
              const std::string curves = !f->curves.empty() ? f->curves
                                         : metrics_alone && f->csv.empty() ? f->metrics + ".svg"
                                                                           : "";
              const std::vector<FileRole> inputs = {{"--metrics", f->metrics}, {"report", f->report}};
              const std::vector<FileRole> outputs = {{"--curves", curves}, {"--csv", f->csv}, {"--html", f->html}};
              require_distinct_files(inputs, outputs);
              if (!curves.empty()) {
                write_output_text(curves, "--curves",
                                  render_curves_svg("ddpx training curves: " + f->metrics,
                                                    read_metrics_curves(f->metrics)));
                if (!f->json) fmt::print("curves: {}\n", curves);
              }
              if (!f->csv.empty()) {
                const MetricsFile metrics = read_metrics_file(f->metrics);
                write_output_text(f->csv, "--csv", metrics_csv(metrics));
                if (!f->json) fmt::print("csv: {} ({} rows)\n", f->csv, metrics.rows.size());
              }
              if (metrics_alone) return 0;
            }
            DDPX_REQUIRE(f->torch_profile.empty() || f->report.empty(),
                         "ddpx report: give a run report or --torch-profile traces, not both");
            DDPX_REQUIRE(!f->torch_profile.empty() || (f->one_rank_report.empty() && f->torch_gradients == 0),
                         "ddpx report: --one-rank-report and --torch-gradients go with --torch-profile");
            DDPX_REQUIRE(f->one_rank_report.empty() || f->torch_gradients > 0,
                         "ddpx report --one-rank-report: give --torch-gradients N, the model's gradient elements "
                         "(sum(p.numel() for p in model.parameters() if p.requires_grad)): the traces do not hold "
                         "them, and ddpx predict re-cuts buckets from them");
            const bool have_run = !f->report.empty() || !f->torch_profile.empty();
            DDPX_REQUIRE(have_run || !f->check_trace.empty(),
                         "ddpx report: give a run report (ddpx report run.json) or a trace to check (ddpx report "
                         "--check-trace run.trace.json)");
            DDPX_REQUIRE(have_run || (f->trace.empty() && f->peak.empty() && !f->json && f->html.empty()),
                         "ddpx report: --trace, --peak, --json and --html need a run report (ddpx report run.json ...)");
            DDPX_REQUIRE(!f->json || f->check_trace.empty(),
                         "ddpx report: --check-trace prints text, which would break --json's output; check the "
                         "trace in a second call (ddpx report --check-trace FILE)");
            if (!have_run) return check_trace_command(f->check_trace);
            if (!f->trace.empty() || !f->html.empty()) {
              if (!f->trace.empty()) (void)check_output_path(f->trace, "--trace");
              if (!f->html.empty()) (void)check_output_path(f->html, "--html");
              std::vector<FileRole> inputs = {{"report", f->report}, {"--peak", f->peak}};
              for (const std::string& path : f->torch_profile) inputs.push_back({"--torch-profile", path});
              std::vector<FileRole> outputs;
              if (!f->trace.empty()) outputs.push_back({"--trace", f->trace});
              if (!f->html.empty()) outputs.push_back({"--html", f->html});
              require_distinct_files(inputs, outputs);
            }
            RunReport report;
            if (f->torch_profile.empty()) {
              report = load_run_report(f->report);
            } else {
              report = read_torch_profiles(f->torch_profile, TorchProfileOptions{.batch = f->torch_batch});
              if (!f->one_rank_report.empty()) {
                (void)check_output_path(f->one_rank_report, "--one-rank-report");
                const int rank = fastest_rank(report);
                save_run_report(one_rank_report(report, rank, f->torch_gradients), f->one_rank_report);
                if (!f->json)
                  fmt::print("one-rank report: {} (rank {}'s steps without their exposed communication; next: "
                             "ddpx predict {} --link ... --ranks 2,4,8)\n", f->one_rank_report, rank,
                             f->one_rank_report);
              }
            }
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
            }
            const std::string link = report.ranks.empty() ? "" : report.ranks.front().info.transport;
            const std::string comm_text =
                report.config.world > 1 || report.config.ddp
                    ? format_comm_stats(run_comm_stats(report, peak_ptr), report.config.world, link)
                    : "";
            if (!f->json) {
              fmt::print("{}\n", provenance_block(report));
              fmt::print("{}\n", format_breakdown(breakdown));
              if (!comm_text.empty()) fmt::print("{}\n", comm_text);
              fmt::print("verdict: {}\n", verdict.text());
            }
            if (!f->trace.empty()) {
              TraceWriter trace;
              trace.add_report(report);
              trace.write(f->trace);
              fmt::print("trace: {} (open it in Perfetto or chrome://tracing)\n", f->trace);
            }
            if (!f->html.empty()) {
              ReportPage page;
              page.title = fmt::format("ddpx run: {} {}, batch {} x {} rank{}", report.config.model,
                                       report.config.precision, report.config.batch, report.config.world,
                                       report.config.world == 1 ? "" : "s");
              page.provenance = provenance_block(report);
              page.breakdown = format_breakdown(breakdown);
              page.comm_stats = comm_text;
              if (!f->metrics.empty())
                page.curves_svg = render_curves_svg("Training curves: " + f->metrics, read_metrics_curves(f->metrics));
              // The link as the page will find it: relative when the trace sits in the page's folder.
              if (!f->trace.empty()) {
                const std::filesystem::path trace_path(f->trace), html_path(f->html);
                page.trace_link = trace_path.parent_path() == html_path.parent_path()
                                      ? trace_path.filename().string() : std::filesystem::absolute(trace_path).string();
              }
              write_output_text(f->html, "--html", report_html(report, breakdown, verdict, page));
              if (!f->json) fmt::print("html: {}\n", f->html);
            }
            if (!f->check_trace.empty()) return check_trace_command(f->check_trace);
            return 0;
          }};
}

}  // namespace ddpx::cli
