// Table and JSON of a scaling prediction (see prediction_output.hpp).
#include "predict/prediction_output.hpp"

#include <fmt/format.h>

namespace ddpx::predict {

std::string lossy_hook_warning() {
  return "it compresses the gradients (fp16/bf16 round them, PowerSGD keeps a low rank), which can cost accuracy; "
         "docs/results.md's table of the hooks' accuracy (issue 39) measures it on Fashion-MNIST, and "
         "`ddpx train --val SOURCE --eval-every N` measures it on your data";
}

namespace {

std::string cap_text(double mb) { return fmt::format("{:g}", mb); }

// " [same buckets at 100, 2000 MB]" for a row that stands for other caps too.
std::string same_caps_text(const PredictedRow& row) {
  if (row.same_plan_caps.empty()) return "";
  std::string caps;
  for (double cap : row.same_plan_caps) caps += (caps.empty() ? "" : ", ") + cap_text(cap);
  return " [same buckets at " + caps + " MB]";
}

std::string recommendation_line(const Prediction& p, const Recommendation& rec) {
  const PredictedRow& best = p.rows[rec.recommended];
  std::string line = fmt::format("# recommended at {} ranks: --comm-hook {} --bucket-mb {} ({:.2f} steps/s, {:.0f}%)",
                                 rec.ranks, best.hook.text(), cap_text(best.bucket_cap_mb), best.steps_per_s,
                                 100 * best.scaling_efficiency);
  if (rec.tie_to_lossless) {
    const PredictedRow& lossy = p.rows[rec.fastest];
    return line + fmt::format("; {} predicts {:+.2f}% ({:.2f} steps/s{}), within the model's {:.0f}% margin: a tie "
                              "goes to the lossless hook, which computes what training without DDP computes\n",
                              lossy.hook.text(), 100 * (lossy.steps_per_s / best.steps_per_s - 1), lossy.steps_per_s,
                              lossy.hook_cost_measured ? "" : ", its own cost not measured", 100 * kLossyMargin);
  }
  if (rec.fastest_lossless >= 0 && rec.fastest_lossless != rec.fastest) {
    const PredictedRow& lossless = p.rows[rec.fastest_lossless];
    line += fmt::format("; without compression: --bucket-mb {} ({:.2f} steps/s, {:.0f}%)",
                        cap_text(lossless.bucket_cap_mb), lossless.steps_per_s, 100 * lossless.scaling_efficiency);
  }
  if (comm_hook_compresses(best.hook))
    line += fmt::format("\n#   {} is lossy: {}", best.hook.text(), lossy_hook_warning());
  return line + "\n";
}

}  // namespace

std::string format_prediction(const PredictionRequest& r, const Prediction& p) {
  const MeasuredStep& base = r.reports.front();
  std::string out = fmt::format("# ddpx predict: {} {}, batch {} per rank, on {}\n", base.model, base.precision,
                                base.batch, base.device);
  out += fmt::format("# link: {}\n", r.link.description);
  if (r.link.network)
    out += fmt::format("# network: {} ({:.0f} GB/s busbw per NIC, one NIC per rank), {} ranks per node\n",
                       r.link.network->name, r.link.network->busbw_GBps, r.link.ranks_per_node);
  out += fmt::format("# baseline: {:.2f} steps/s measured one rank ({}); efficiency = predicted steps/s / baseline\n",
                     p.baseline_steps_per_s, p.baseline_from);
  out += "# step = compute (the report's step without communication) + exposed comm (not covered by backward)\n";
  out += fmt::format("# {:>5} {:>11} {:>7} {:>7} {:>9} {:>8} {:>6} {:>9} {:>9}  {}\n", "ranks", "hook", "bucket",
                     "buckets", "step", "steps/s", "eff", "comm", "exposed", "verdict");
  out += fmt::format("# {:>5} {:>11} {:>7} {:>7} {:>9} {:>8} {:>6} {:>9} {:>9}\n", "", "", "(MB)", "", "(ms)", "",
                     "(%)", "(ms)", "(ms)");
  for (const PredictedRow& row : p.rows)
    out += fmt::format("  {:>5} {:>11} {:>7} {:>7} {:>9.2f} {:>8.2f} {:>6.1f} {:>9.2f} {:>9.2f}  {}{}{}\n", row.ranks,
                       row.hook.text(), cap_text(row.bucket_cap_mb), row.buckets, row.step_ms, row.steps_per_s,
                       100 * row.scaling_efficiency, row.comm_busy_ms, row.exposed_comm_ms, row.verdict,
                       row.hook_cost_measured || comm_hook_entry(row.hook).kind == HookKind::allreduce
                           ? ""
                           : " [hook cost not measured]",
                       same_caps_text(row));
  for (const Recommendation& rec : p.recommendations) out += recommendation_line(p, rec);
  for (const std::string& note : p.notes) out += "# note: " + note + "\n";
  return out;
}

nlohmann::json prediction_json(const PredictionRequest& r, const Prediction& p) {
  using nlohmann::json;
  json reports = json::array();
  for (const MeasuredStep& m : r.reports)
    reports.push_back({{"file", m.file}, {"model", m.model}, {"precision", m.precision}, {"device", m.device},
                       {"ddp", m.ddp}, {"hook", m.hook.text()}, {"bucket_mb", m.bucket_mb},
                       {"steps_per_s", m.steps_per_s}, {"compute_ms", m.compute_ms()},
                       {"backward_ms", m.backward_ms}, {"ready_times_measured", m.ready_times_measured},
                       {"hook_own_fixed_ms", m.own.fixed_ms}, {"hook_own_per_element_ms", m.own.per_element_ms}});
  json link = {{"description", r.link.description}, {"intra", r.link.intra.name},
               {"intra_busbw_GBps", r.link.intra.busbw_GBps}, {"ranks_per_node", r.link.ranks_per_node},
               {"sources", r.link.sources}};
  if (r.link.intra.measured) {
    link["measured_world"] = r.link.intra.measured->world;
    link["fitted_hop_latency_us"] = r.link.intra.measured->hop_latency_us;
  }
  link["network"] = r.link.network ? json(r.link.network->name) : json(nullptr);
  json rows = json::array();
  for (const PredictedRow& row : p.rows)
    rows.push_back({{"ranks", row.ranks},
                    {"hook", row.hook.text()},
                    {"bucket_cap_mb", row.bucket_cap_mb},
                    {"buckets", row.buckets},
                    {"allreduce_calls", row.messages},
                    {"ring_calls", row.ring_calls},
                    {"tree_calls", row.tree_calls},
                    {"wire_bytes", row.wire_bytes},
                    {"step_ms", row.step_ms},
                    {"steps_per_s", row.steps_per_s},
                    {"scaling_efficiency", row.scaling_efficiency},
                    {"compute_ms", row.compute_ms},
                    {"backward_ms", row.backward_ms},
                    {"comm_busy_ms", row.comm_busy_ms},
                    {"exposed_comm_ms", row.exposed_comm_ms},
                    {"hidden_comm_ms", row.hidden_comm_ms},
                    {"comm_latency_ms", row.comm_latency_ms},
                    {"comm_bandwidth_ms", row.comm_bandwidth_ms},
                    {"hook_own_ms", row.hook_own_ms},
                    {"hook_cost_measured", row.hook_cost_measured},
                    {"same_plan_caps_mb", row.same_plan_caps},
                    {"phases_from", row.phases_from},
                    {"bound", row.bound},
                    {"verdict", row.verdict}});
  json recommendations = json::array();
  for (const Recommendation& rec : p.recommendations) {
    auto pick = [&](int index) {
      if (index < 0) return json(nullptr);
      const PredictedRow& row = p.rows[index];
      return json{{"hook", row.hook.text()}, {"bucket_cap_mb", row.bucket_cap_mb}, {"steps_per_s", row.steps_per_s},
                  {"scaling_efficiency", row.scaling_efficiency}};
    };
    recommendations.push_back({{"ranks", rec.ranks}, {"fastest", pick(rec.fastest)},
                               {"fastest_lossless", pick(rec.fastest_lossless)},
                               {"recommended", pick(rec.recommended)}, {"tie_to_lossless", rec.tie_to_lossless}});
  }
  return json{{"tool", "ddpx predict"},
              {"version", 1},
              {"reports", reports},
              {"link", link},
              {"baseline_steps_per_s", p.baseline_steps_per_s},
              {"baseline_from", p.baseline_from},
              {"rows", rows},
              {"recommendations", recommendations},
              {"notes", p.notes}};
}

}  // namespace ddpx::predict
