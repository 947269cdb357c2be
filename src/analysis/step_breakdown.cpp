// Summaries of step records (see step_breakdown.hpp).
#include "analysis/step_breakdown.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace ddpx {

using nlohmann::json;

std::string_view phase_name(Phase phase) {
  switch (phase) {
    case Phase::data_wait: return "data_wait";
    case Phase::h2d_copy: return "h2d_copy";
    case Phase::forward: return "forward";
    case Phase::backward: return "backward";
    case Phase::comm: return "comm";
    case Phase::exposed_comm: return "exposed_comm";
    case Phase::optimizer: return "optimizer";
    case Phase::total: return "total";
  }
  return "unknown";
}

double phase_ms(const PhaseTimes& t, Phase phase) {
  switch (phase) {
    case Phase::data_wait: return t.data_wait_ms;
    case Phase::h2d_copy: return t.h2d_copy_ms;
    case Phase::forward: return t.forward_ms;
    case Phase::backward: return t.backward_ms;
    case Phase::comm: return t.comm_ms;
    case Phase::exposed_comm: return t.exposed_comm_ms;
    case Phase::optimizer: return t.optimizer_ms;
    case Phase::total: return t.total_ms;
  }
  return 0;
}

namespace {

RankBreakdown summarize_rank(const RankRun& run) {
  RankBreakdown out;
  out.rank = run.info.rank;
  out.device_name = run.info.device_name;
  out.steps = run.steps.size();
  DDPX_REQUIRE(!run.steps.empty(), "rank {} recorded no measured steps: run more steps than --warmup", out.rank);
  std::vector<double> values(run.steps.size());
  // CUDA runs time their buckets only at progress lines; the other steps' comm is a stand-in (the exposed part):
  // where some steps carry buckets, the comm phase is summarized over those alone.
  std::vector<double> sampled_comm;
  for (const StepRecord& step : run.steps)
    if (!step.buckets.empty()) sampled_comm.push_back(step.phases.comm_ms);
  for (Phase phase : kAllPhases) {
    if (phase == Phase::comm && !sampled_comm.empty()) {
      out.phases[static_cast<size_t>(phase)] = spread_of(sampled_comm);
      continue;
    }
    for (size_t s = 0; s < run.steps.size(); ++s) values[s] = phase_ms(run.steps[s].phases, phase);
    out.phases[static_cast<size_t>(phase)] = spread_of(values);
  }
  for (size_t s = 0; s < run.steps.size(); ++s) {
    const PhaseTimes& t = run.steps[s].phases;
    DDPX_REQUIRE(t.total_ms > 0, "rank {} step {}: total_ms must be positive, got {}", out.rank,
                 run.steps[s].step, t.total_ms);
    values[s] = std::abs(t.serial_sum_ms() - t.total_ms) / t.total_ms;
  }
  out.parts_mismatch = median_of(values);
  return out;
}

std::string rank_label(int rank, const std::string& device) {
  return device.empty() ? fmt::format("rank {}", rank) : fmt::format("rank {} ({})", rank, device);
}

}  // namespace

std::string format_ddp_cost(const std::optional<DdpCost>& cost) {
  if (!cost)
    return "# DDP cost: not calibrated (no calibration steps in the warm-up: --calibrate-steps, --warmup); only the "
           "exposed communication above is known, the cost hidden under overlap is not\n";
  const DdpCost& d = *cost;
  const std::string hooks =
      d.hook_work_sampled
          ? fmt::format("#   the hooks ran {:.3f} ms under compute (overlapped: they cost the step only through that "
                        "slowdown)\n",
                        d.hook_work_ms)
          : std::string("#   the hooks' time under compute was not sampled: CUDA runs time their buckets only at "
                        "progress lines, and none fell in the measured steps (a smaller --log-every samples it; "
                        "the comm phase above is then only its exposed part)\n");
  return fmt::format(
      "# DDP cost: {:.3f} ms ({:.1f}% of the step) = exposed comm {:.3f} + compute slowed by DDP's work beside it "
      "{}\n"
      "{}"
      "#   measured DDP step {:.3f} ms - calibrated plain step {:.3f} ms ({} calibration step{} per rank: no "
      "reducer during backward)\n",
      d.cost_ms, 100.0 * d.fraction(), d.exposed_comm_ms,
      // A negative slowdown is the steps' noise, not a speed-up: said so, not printed as "-0.01".
      d.hidden_ms() >= 0 ? fmt::format("{:.3f}", d.hidden_ms())
                         : fmt::format("{:.3f} (none measurable: the steps' noise)", d.hidden_ms()),
      hooks, d.measured_step_ms, d.plain_step_ms,
      d.calibration_steps, d.calibration_steps == 1 ? "" : "s");
}

StepBreakdown summarize_steps(const RunReport& report) {
  DDPX_REQUIRE(!report.ranks.empty(), "step breakdown: the run report has no ranks");
  StepBreakdown out;
  out.config = report.config;
  for (const RankRun& run : report.ranks) out.ranks.push_back(summarize_rank(run));

  std::vector<double> medians(out.ranks.size());
  for (Phase phase : kAllPhases) {
    for (size_t r = 0; r < out.ranks.size(); ++r) medians[r] = out.ranks[r][phase].median;
    out.across_ranks[static_cast<size_t>(phase)] = spread_of(medians);
  }
  const RankBreakdown* straggler = &out.ranks.front();
  for (const RankBreakdown& rank : out.ranks) {
    if (rank[Phase::total].median > (*straggler)[Phase::total].median) straggler = &rank;
    out.parts_mismatch = std::max(out.parts_mismatch, rank.parts_mismatch);
  }
  out.straggler_rank = straggler->rank;
  out.straggler = rank_label(straggler->rank, straggler->device_name);
  out.step_ms = (*straggler)[Phase::total].median;
  out.steps_per_s = 1000.0 / out.step_ms;
  out.images_per_s = out.steps_per_s * static_cast<double>(report.config.images_per_step());
  out.parts_add_up = out.parts_mismatch <= StepBreakdown::kPartsTolerance;
  out.ddp_cost = ddp_cost_of(report);
  return out;
}

std::string format_breakdown(const StepBreakdown& b) {
  const RunConfig& c = b.config;
  std::string out;
  // The weight gradients' type where it is not the precision's (bf16 runs with --weight-grads fp32, or with a
  // reducer that reads its buckets, say nothing: their gradients are fp32 as every precision's were before the flag).
  const std::string precision =
      c.bf16_weight_grads() ? fmt::format("{} (bf16 weight gradients)", c.precision) : c.precision;
  out += fmt::format("# ddpx step breakdown: {}, batch {} per rank, {}, {} rank{}, {}\n", c.model, c.batch,
                     precision, c.world, c.world == 1 ? "" : "s",
                     c.ddp ? fmt::format("hook {}, bucket {} MB (first {} MB), overlap {}, grad_accum {}", c.hook,
                                         c.bucket_mb, c.first_bucket_mb, c.overlap ? "on" : "off", c.grad_accum)
                           : std::string("no DDP"));
  out += fmt::format("# {} measured steps on rank 0; median over steps per rank, then min / median / max across "
                     "ranks\n#\n",
                     b.ranks.front().steps);
  out += fmt::format("# {:>14} {:>11} {:>10} {:>10} {:>10}\n", "phase", "median(ms)", "min(ms)", "max(ms)",
                     "% of step");
  const double total = b[Phase::total].median;
  auto phase_line = [&](Phase phase, const char* note) {
    const Spread& s = b[phase];
    return fmt::format("  {:>14} {:>11.3f} {:>10.3f} {:>10.3f} {:>10.1f}{}\n", phase_name(phase), s.median, s.min,
                       s.max, 100.0 * s.median / total, note);
  };
  double serial = 0;
  for (Phase phase : kAllPhases) {
    if (phase == Phase::total) continue;
    out += phase_line(phase, phase == Phase::comm ? "  (overlaps backward; not a serial part)" : "");
    if (phase != Phase::comm) serial += b[phase].median;
  }
  // A median does not add: phases that are slow in different steps leave a gap between the total's median and the
  // sum of theirs although every step's parts add up. Where the check below passes, that gap is said to be one.
  const bool gap_of_medians = b.parts_add_up && std::abs(total - serial) > StepBreakdown::kPartsTolerance * total;
  out += fmt::format("  {:>14} {:>11.3f} {:>10} {:>10} {:>10.1f}  {}\n", "other", total - serial, "-", "-",
                     100.0 * (total - serial) / total,
                     gap_of_medians ? "(total - the phases' medians: medians do not add up; each step's parts do, "
                                      "see 'parts add up')"
                                    : "(total - serial parts)");
  out += phase_line(Phase::total, "");
  out += fmt::format("#\n# {:>4} {:<24} {:>6} {:>11} {:>17} {:>14}\n", "rank", "device", "steps", "total(ms)",
                     "exposed comm(ms)", "data wait(ms)");
  for (const RankBreakdown& r : b.ranks)
    out += fmt::format("  {:>4} {:<24} {:>6} {:>11.3f} {:>17.3f} {:>14.3f}\n", r.rank,
                       r.device_name.empty() ? "-" : r.device_name, r.steps, r[Phase::total].median,
                       r[Phase::exposed_comm].median, r[Phase::data_wait].median);
  out += fmt::format("# straggler: {}, median step {:.3f} ms\n", b.straggler, b.step_ms);
  out += fmt::format("# steps/s: {:.3f}   images/s: {:.1f}   ({} images per step; from the straggler's median step, "
                     "without the time between steps that a wall-clock figure counts)\n", b.steps_per_s,
                     b.images_per_s, c.images_per_step());
  // Two figures, said as two: "other" above is the difference of the medians, this one the median of each
  // step's own difference (robust to a phase's slow steps), which the check uses.
  out += fmt::format("# parts add up: {} (step by step, the serial phases differ from the step's total by {:.1f}% "
                     "(median) on the worst rank; tolerance {:.0f}%; 'other' above is the gap between the phases' "
                     "medians, which need not add up)\n",
                     b.parts_add_up ? "yes" : "NO, some time is not measured", 100.0 * b.parts_mismatch,
                     100.0 * StepBreakdown::kPartsTolerance);
  if (c.ddp) out += format_ddp_cost(b.ddp_cost);
  return out;
}

void to_json(json& j, const Spread& v) { j = json{{"min", v.min}, {"median", v.median}, {"max", v.max}}; }

void to_json(json& j, const StepBreakdown& b) {
  json across = json::object();
  for (Phase phase : kAllPhases) across[std::string(phase_name(phase)) + "_ms"] = b[phase];
  json ranks = json::array();
  for (const RankBreakdown& r : b.ranks) {
    json phases = json::object();
    for (Phase phase : kAllPhases) phases[std::string(phase_name(phase)) + "_ms"] = r[phase];
    ranks.push_back(json{{"rank", r.rank},
                         {"device_name", r.device_name},
                         {"steps", r.steps},
                         {"phases", phases},
                         {"parts_mismatch", r.parts_mismatch}});
  }
  j = json{{"config", b.config},
           {"across_ranks", across},
           {"ranks", ranks},
           {"straggler_rank", b.straggler_rank},
           {"straggler", b.straggler},
           {"step_ms", b.step_ms},
           {"steps_per_s", b.steps_per_s},
           {"images_per_s", b.images_per_s},
           {"parts_mismatch", b.parts_mismatch},
           {"parts_add_up", b.parts_add_up}};
  j["ddp_cost"] = b.ddp_cost ? json(*b.ddp_cost) : json(nullptr);
}

}  // namespace ddpx
