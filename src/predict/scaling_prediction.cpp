// Simulating the overlapped step at N ranks for every hook and bucket cap (see scaling_prediction.hpp).
#include "predict/scaling_prediction.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "predict/overlap_timeline.hpp"

namespace ddpx::predict {
namespace {

std::string ms_text(double ms) { return ms < 10 ? fmt::format("{:.2f}", ms) : fmt::format("{:.1f}", ms); }

bool is_cpu_device(const std::string& device) { return device == "cpu"; }

// Everything that makes the inputs disagree: reports of different runs, a link measured for another run, rank counts
// the link cannot price.
void check_inputs(const PredictionRequest& r) {
  DDPX_REQUIRE(!r.reports.empty(), "ddpx predict: give at least one run report");
  DDPX_REQUIRE(!r.hooks.empty() && !r.bucket_caps_mb.empty() && !r.ranks.empty(),
               "ddpx predict: --hooks, --bucket-cap-mb and --ranks must each list at least one value");
  const MeasuredStep& base = r.reports.front();
  for (size_t k = 1; k < r.reports.size(); ++k) {
    const MeasuredStep& other = r.reports[k];
    auto same = [&](const std::string& field, const std::string& a, const std::string& b) {
      DDPX_REQUIRE(a == b, "report {} is of {} '{}' but report {} of '{}': every report must come from the same "
                   "model, precision, device and batch (only the hook may differ)", other.file, field, b, base.file,
                   a);
    };
    same("model", base.model, other.model);
    same("precision", base.precision, other.precision);
    same("device", base.device, other.device);
    same("batch", std::to_string(base.batch), std::to_string(other.batch));
    DDPX_REQUIRE(base.tensors == other.tensors, "report {} has other gradient tensors than report {}: they are not "
                 "runs of one model", other.file, base.file);
    for (size_t j = 0; j < k; ++j)
      DDPX_REQUIRE(!(r.reports[j].hook == other.hook && r.reports[j].ddp && other.ddp),
                   "reports {} and {} both measured hook {}: give one report per hook", r.reports[j].file,
                   other.file, other.hook.text());
  }
  const std::string link_file = r.link.sources.empty() ? r.link.intra.name : r.link.sources.front();
  if (!r.link.model.empty())
    DDPX_REQUIRE(r.link.model == base.model, "--link {} was measured for model '{}' but report {} is of model "
                 "'{}': measure the link for this run, or use a preset", link_file, r.link.model, base.file,
                 base.model);
  if (!r.link.precision.empty())
    DDPX_REQUIRE(r.link.precision == base.precision, "--link {} was measured for precision '{}' but report {} ran "
                 "'{}': measure the link for this run, or use a preset", link_file, r.link.precision, base.file,
                 base.precision);
  if (!r.link.device.empty())
    DDPX_REQUIRE(is_cpu_device(r.link.device) == is_cpu_device(base.device),
                 "--link {} was measured with --device {} but report {} ran on '{}': a link and a step of different "
                 "devices do not make one machine; measure `ddpx allreduce --device {}` where the report ran",
                 link_file, r.link.device, base.file, base.device, is_cpu_device(base.device) ? "cpu" : "cuda");
  const int most = max_ranks(r.link);
  for (int n : r.ranks)
    DDPX_REQUIRE(n >= 2 && n <= most,
                 "--ranks {}: beyond what this link model supports ({} is the most: {}); {}", n, most,
                 r.link.description,
                 r.link.network ? "1024 is ddpx predict's ceiling"
                                : "add --network ib-ndr to join nodes, or --ranks-per-node to put more ranks on one "
                                  "node of this link");
  for (double cap : r.bucket_caps_mb)
    DDPX_REQUIRE(cap > 0 && std::isfinite(cap), "--bucket-cap-mb {}: a cap must be a positive number of MiB", cap);
}

const MeasuredStep& report_for(const PredictionRequest& r, const CommHookSpec& hook, bool& exact) {
  for (const MeasuredStep& m : r.reports)
    if (m.ddp && m.hook == hook) return exact = true, m;
  exact = false;
  return r.reports.front();
}

void write_verdict(PredictedRow& row, const LinkModel& link) {
  if (row.exposed_comm_ms < 0.05 * row.step_ms) {
    row.bound = "compute";
    row.verdict = fmt::format("compute-bound: communication adds {} ms ({:.1f}% of the step); {} of its {} ms "
                              "hidden under the backward pass", ms_text(row.exposed_comm_ms),
                              100 * row.exposed_comm_ms / row.step_ms, ms_text(row.hidden_comm_ms),
                              ms_text(row.comm_busy_ms));
    return;
  }
  const double biggest = std::max({row.comm_latency_ms, row.hook_own_ms, row.comm_bandwidth_ms});
  if (biggest == row.comm_latency_ms) {
    row.bound = "latency";
    row.verdict = fmt::format("latency-bound: {} all-reduce calls pay {} ms of per-call latency, {} ms exposed; "
                              "fewer, larger buckets", row.messages, ms_text(row.comm_latency_ms),
                              ms_text(row.exposed_comm_ms));
  } else if (biggest == row.hook_own_ms) {
    row.bound = "hook";
    row.verdict = fmt::format("hook-bound: the comm stream's work besides all-reduce (hook kernels, optimizer "
                              "spans) is {} ms a step, {} ms exposed; {}", ms_text(row.hook_own_ms),
                              ms_text(row.exposed_comm_ms),
                              comm_hook_entry(row.hook).kind == HookKind::allreduce
                                  ? "try --optimizer-overlap off (the update after backward)"
                                  : "a cheaper hook");
  } else {
    row.bound = "bandwidth";
    row.verdict = fmt::format("bandwidth-bound: {:.3f} GB a step over {}, {} of {} ms exposed; compress (bf16, "
                              "PowerSGD) or a faster link", static_cast<double>(row.wire_bytes) / 1e9,
                              link.intra.name, ms_text(row.exposed_comm_ms), ms_text(row.comm_busy_ms));
  }
}

PredictedRow simulate_row(const PredictionRequest& r, int ranks, const CommHookSpec& hook, double cap_mb) {
  bool exact = false;
  const MeasuredStep& m = report_for(r, hook, exact);
  PredictedRow row;
  row.ranks = ranks;
  row.hook = hook;
  row.bucket_cap_mb = cap_mb;
  row.hook_cost_measured = exact && m.own.measured;
  row.phases_from = m.file;
  row.compute_ms = m.compute_ms();
  row.backward_ms = m.backward_ms;
  const BucketPlan plan = bucket_plan_of(m.tensors, cap_mb, r.first_bucket_mb);
  std::vector<TimelineBucket> timeline;
  for (size_t b = 0; b < plan.size(); ++b) {
    const auto elements = static_cast<int64_t>(plan[b].numel());
    TimelineBucket t;
    t.ready_ms = m.overlap ? m.tensor_ready_ms[plan[b].end_tensor - 1] : m.backward_ms;
    const double own = m.own.ms(elements);
    row.hook_own_ms += own;
    t.duration_ms = own;
    for (int64_t bytes : comm_hook_wire_messages(hook, plan, b)) {
      if (bytes <= 0) continue;
      const CollectiveCost cost = allreduce_cost(r.link, ranks, bytes);
      t.duration_ms += cost.ms;
      row.comm_latency_ms += cost.latency_ms;
      row.comm_bandwidth_ms += cost.bandwidth_ms;
      row.wire_bytes += bytes;
      ++row.messages;
      if (cost.algorithm == "tree") ++row.tree_calls; else ++row.ring_calls;
    }
    timeline.push_back(t);
  }
  const OverlapResult o = simulate_overlap(timeline, m.backward_ms);
  row.buckets = static_cast<int>(plan.size());
  row.comm_busy_ms = o.busy_ms;
  row.exposed_comm_ms = o.exposed_ms;
  row.hidden_comm_ms = o.hidden_ms;
  row.step_ms = row.compute_ms + o.exposed_ms;
  row.steps_per_s = 1000.0 / row.step_ms;
  write_verdict(row, r.link);
  return row;
}

}  // namespace

std::vector<int> default_ranks(const LinkModel& link) {
  std::vector<int> ranks;
  for (int n = 2; n <= max_ranks(link); n *= 2) ranks.push_back(n);
  if (ranks.empty() || ranks.back() != max_ranks(link)) {
    if (max_ranks(link) >= 2 && (link.network || ranks.empty())) ranks.push_back(max_ranks(link));
  }
  return ranks;
}

Prediction predict_scaling(const PredictionRequest& r) {
  check_inputs(r);
  Prediction p;
  for (const MeasuredStep& m : r.reports)
    if (m.steps_per_s > p.baseline_steps_per_s) p.baseline_steps_per_s = m.steps_per_s, p.baseline_from = m.file;
  DDPX_REQUIRE(p.baseline_steps_per_s > 0, "report {}: no throughput (no measured steps with time)",
               r.reports.front().file);
  // Caps that cut the same buckets make the same row: keep the first, name the others.
  std::vector<std::vector<Bucket>> plans;
  std::vector<size_t> first_cap_with_plan;
  for (size_t c = 0; c < r.bucket_caps_mb.size(); ++c) {
    const std::vector<Bucket> plan =
        bucket_plan_of(r.reports.front().tensors, r.bucket_caps_mb[c], r.first_bucket_mb).buckets();
    const auto same = std::find(plans.begin(), plans.end(), plan);
    first_cap_with_plan.push_back(same == plans.end() ? c : static_cast<size_t>(same - plans.begin()));
    plans.push_back(plan);
  }
  for (int ranks : r.ranks)
    for (const CommHookSpec& hook : r.hooks) {
      const size_t first_row = p.rows.size();
      std::vector<size_t> row_of_cap(r.bucket_caps_mb.size());
      for (size_t c = 0; c < r.bucket_caps_mb.size(); ++c) {
        if (first_cap_with_plan[c] != c) {
          p.rows[row_of_cap[first_cap_with_plan[c]]].same_plan_caps.push_back(r.bucket_caps_mb[c]);
          row_of_cap[c] = row_of_cap[first_cap_with_plan[c]];
          continue;
        }
        PredictedRow row = simulate_row(r, ranks, hook, r.bucket_caps_mb[c]);
        row.scaling_efficiency = row.steps_per_s / p.baseline_steps_per_s;
        row_of_cap[c] = p.rows.size();
        p.rows.push_back(std::move(row));
      }
      (void)first_row;
    }
  for (int ranks : r.ranks) {
    Recommendation rec;
    rec.ranks = ranks;
    for (size_t k = 0; k < p.rows.size(); ++k) {
      const PredictedRow& row = p.rows[k];
      if (row.ranks != ranks) continue;
      if (rec.fastest < 0 || row.steps_per_s > p.rows[rec.fastest].steps_per_s) rec.fastest = static_cast<int>(k);
      if (!comm_hook_compresses(row.hook) &&
          (rec.fastest_lossless < 0 || row.steps_per_s > p.rows[rec.fastest_lossless].steps_per_s))
        rec.fastest_lossless = static_cast<int>(k);
    }
    rec.recommended = rec.fastest;
    const bool fastest_lossy = rec.fastest >= 0 && comm_hook_compresses(p.rows[rec.fastest].hook);
    if (fastest_lossy && rec.fastest_lossless >= 0 &&
        p.rows[rec.fastest].steps_per_s <= p.rows[rec.fastest_lossless].steps_per_s * (1 + kLossyMargin)) {
      rec.recommended = rec.fastest_lossless;
      rec.tie_to_lossless = true;
    }
    p.recommendations.push_back(rec);
  }
  const MeasuredStep& first = r.reports.front();
  if (is_cpu_device(first.device) && r.link.device.empty() && !r.link.intra.measured)
    p.notes.push_back(fmt::format("{} was measured on the CPU, and --link is a GPU preset ({}): the rows combine a "
                                  "CPU's compute with a GPU link; for CPU ranks measure the link with `ddpx "
                                  "allreduce --device cpu --nproc-per-node 2 --json link.json`, for GPUs give a GPU "
                                  "report", first.file, r.link.intra.name));
  const MeasuredStep& base = r.reports.front();
  if (!base.ready_times_measured)
    p.notes.push_back(fmt::format("{} has no bucket ready times (a run without --ddp, or --no-overlap): gradients "
                                  "are taken to become final uniformly over the backward pass", base.file));
  // Note [bf16 weight gradients in their fp32 slots] (model_cuda/cuda_model.hpp): only a run whose reducer reads
  // nothing writes them (no --ddp, or the allreduce hook at one rank), so DDP steps at more ranks built on such a
  // report's phases leave out what fp32 gradients cost.
  if (base.bf16_weight_grads)
    p.notes.push_back(fmt::format("{} wrote bf16 weight gradients (--weight-grads auto, without --ddp or with the "
                                  "allreduce hook at one rank); past one rank DDP's buckets are fp32, so rows whose "
                                  "phases come from it leave out what fp32 gradients cost (2.5-3% of a ViT-L/32 bf16 "
                                  "step on an H200): record it with --weight-grads fp32", base.file));
  for (const CommHookSpec& hook : r.hooks) {
    bool exact = false;
    (void)report_for(r, hook, exact);
    if (!exact)
      p.notes.push_back(fmt::format("hook {}: no report of a --ddp run with --comm-hook {} was given, so its own "
                                    "work (casts, PowerSGD's products) is taken from {} ({}); give one for its "
                                    "measured cost", hook.text(), hook.text(), base.file,
                                    base.ddp ? "hook " + base.hook.text() : "nothing: no --ddp"));
  }
  if (r.link.intra.measured && !r.ranks.empty() && r.ranks.back() > r.link.intra.measured->world)
    p.notes.push_back(fmt::format("the link was measured among {} ranks; larger N extrapolates its fitted latency "
                                  "and bandwidth", r.link.intra.measured->world));
  return p;
}

}  // namespace ddpx::predict
