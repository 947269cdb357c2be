// Fuzz target: run reports (load_run_report: `ddpx report FILE`, `ddpx bench`/`tune` trials), followed by what
// `ddpx report` does with an accepted report: breakdown, communication statistics, verdict, trace, JSON output.
// The reader must guarantee, for any bytes: no crash, no hang, no unbounded memory, every refusal a ddpx::Error
// naming the file and field; and a report it accepts is one every analysis can handle (no crash, no undefined
// behaviour), and whose trace passes check_trace (times that fit the trace's int64 nanoseconds).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz_support.hpp"
#include "analysis/comm_stats.hpp"
#include "analysis/step_breakdown.hpp"
#include "report/step_record.hpp"
#include "analysis/trace_writer.hpp"
#include "analysis/verdict.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = ddpx::fuzz::write_scratch_file("report.json", data, size);
  ddpx::fuzz::expect_clean_refusal([&] {
    const ddpx::RunReport report = ddpx::load_run_report(path.string());
    const ddpx::StepBreakdown breakdown = ddpx::summarize_steps(report);
    const ddpx::Verdict verdict = ddpx::diagnose(report);
    nlohmann::json out;
    to_json(out["breakdown"], breakdown);
    to_json(out["verdict"], verdict);
    (void)out.dump(1);
    (void)ddpx::format_breakdown(breakdown);
    (void)verdict.text();
    const std::string& link = report.ranks.front().info.transport;
    (void)ddpx::format_comm_stats(ddpx::run_comm_stats(report), report.config.world, link);
    ddpx::TraceWriter trace;
    trace.add_report(report);
    const nlohmann::json trace_json = trace.to_json();
    (void)trace_json.dump();
    // The trace of an accepted report is one the viewers can draw (TraceWriter's guarantee).
    for (const std::string& problem : ddpx::check_trace(trace_json)) {
      std::fprintf(stderr, "ddpx fuzz: the trace of an accepted report is broken: %s\n", problem.c_str());
      std::abort();
    }
  });
  return 0;
}
