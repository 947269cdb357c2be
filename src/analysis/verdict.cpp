// The verdict rules (see verdict.hpp and docs/verdict.md).
#include "analysis/verdict.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "comm_plan/hook_catalogue.hpp"
#include "analysis/step_breakdown.hpp"

namespace ddpx {

using nlohmann::json;

std::string_view bound_name(Bound bound) {
  switch (bound) {
    case Bound::communication: return "communication";
    case Bound::input: return "input";
    case Bound::launch: return "launch";
    case Bound::compute: return "compute";
  }
  return "unknown";
}

std::string Verdict::text() const {
  std::string out = finding + ": " + advice + ".";
  for (const std::string& note : notes) out += " " + note;
  return out;
}

namespace {

std::string pct(double fraction) {
  const double percent = 100.0 * fraction;
  return percent < 9.95 ? fmt::format("{:.1f}%", percent) : fmt::format("{:.0f}%", percent);
}

std::string ms(double value) { return value < 1.0 ? fmt::format("{:.2f}", value) : fmt::format("{:.1f}", value); }

enum class LinkSpeed { slow, fast, unknown };

struct Link {
  LinkSpeed speed = LinkSpeed::unknown;
  std::string description;
};

Link classify_link(const RunReport& report) {
  std::string transport;
  for (const RankRun& rank : report.ranks)
    if (!rank.info.transport.empty()) {
      transport = rank.info.transport;
      break;
    }
  auto has = [&](std::string_view what) { return transport.find(what) != std::string::npos; };
  if (transport.empty()) return {LinkSpeed::unknown, "the link is unknown"};
  if (has("SHM")) return {LinkSpeed::slow, "the link is host shared memory (SHM)"};
  if (has("NET") || has("Socket") || has("IB")) return {LinkSpeed::slow, fmt::format("the link is the network ({})", transport)};
  if (transport.rfind("NV", 0) == 0) return {LinkSpeed::fast, fmt::format("the link is NVLink ({})", transport)};
  if (has("P2P")) return {LinkSpeed::fast, fmt::format("the link is GPU peer-to-peer ({})", transport)};
  return {LinkSpeed::unknown, fmt::format("the link is {}", transport)};
}

// What the report's hook puts on the wire, as the hook catalogue says; a run without one ("": no --ddp) sends the
// plain fp32 gradients, and a spelling this ddpx does not know is neither plain nor cast.
bool sends(const std::string& hook, WireForm form) {
  if (hook.empty()) return form == WireForm::fp32;
  const CommHookEntry* entry = find_comm_hook(hook);
  return entry && entry->wire == form;
}
bool is_plain_allreduce(const std::string& hook) { return sends(hook, WireForm::fp32); }
bool is_cast_hook(const std::string& hook) { return sends(hook, WireForm::half); }

// A bucket cap that splits gradients of grad_mb into several buckets: the usual 25 MB for large models, a quarter
// of the gradients for models whose gradients fit in one 25 MB bucket anyway.
std::string overlapping_cap(double grad_mb) {
  if (grad_mb <= 0 || grad_mb >= 100) return "25";
  return fmt::format("{:.2g}", grad_mb / 4);
}

std::string communication_advice(const RunConfig& c, const Link& link, size_t buckets_per_step, double grad_mb) {
  const bool one_bucket = buckets_per_step == 1;  // 0: no step sampled its buckets (unknown)
  const std::string cap = overlapping_cap(grad_mb);
  const std::string more_accum =
      fmt::format("try --grad-accum {} (one all-reduce per {} micro-batches) or a larger --batch", 2 * c.grad_accum,
                  2 * c.grad_accum);
  if (link.speed == LinkSpeed::slow) {
    if (is_plain_allreduce(c.hook)) return "try --comm-hook powersgd:4, or --comm-hook bf16 --bucket-mb 25";
    if (is_cast_hook(c.hook) && one_bucket)
      return fmt::format("try --bucket-mb {} so the compressed buckets overlap the backward pass, or --comm-hook "
                         "powersgd:4", cap);
    if (is_cast_hook(c.hook)) return "try --comm-hook powersgd:4";
    return more_accum;
  }
  if (one_bucket)
    return fmt::format("all gradients travel in one bucket after the backward pass: try --bucket-mb {} so "
                       "communication overlaps it", cap);
  if (is_plain_allreduce(c.hook)) return "try --comm-hook bf16 (half the bytes), or --grad-accum 2";
  return more_accum;
}

// "11% of the step (1.2 of 11.4 ms: exposed communication 0.10 + compute slowed by DDP's work beside it 1.1; the
// hooks ran 5.1 ms under compute; calibrated plain step 10.2 ms)": the two parts add up to the cost. The hooks'
// time under compute is said apart, not as a term: it overlapped the backward pass and costs the step only through
// the slowdown (5.1 ms of cast kernels beside the backward cost a bf16 step 1.1 ms on the H200).
std::string cost_sentence(const DdpCost& d) {
  const std::string hooks = d.hook_work_sampled ? fmt::format("the hooks ran {} ms under compute", ms(d.hook_work_ms))
                                                : std::string("the hooks' time under compute not sampled");
  return fmt::format("{} of the step ({} of {} ms: exposed communication {} + compute slowed by DDP's work beside it "
                     "{}; {}; calibrated plain step {} ms)",
                     pct(d.fraction()), ms(d.cost_ms), ms(d.measured_step_ms), ms(d.exposed_comm_ms),
                     d.hidden_ms() >= 0 ? ms(d.hidden_ms())
                                        : ms(d.hidden_ms()) + " (none measurable: the steps' noise)",
                     hooks, ms(d.plain_step_ms));
}

// What DDP on one GPU (one CPU rank) costs: the calibrated cost when there is one, else only the exposed part,
// said as such.
std::string one_rank_cost(const std::optional<DdpCost>& cost, double E, double T, bool cpu_engine) {
  const std::string subject = cpu_engine ? "DDP on one CPU rank" : "DDP on one GPU";
  // A DDP step no slower than the calibrated plain one: the difference is the steps' noise, not a gain.
  if (cost && cost->cost_ms <= 0)
    return fmt::format("{} costs nothing measurable (the DDP step, {} ms, was no slower than the calibrated plain "
                       "step, {} ms; a difference of {} is the steps' noise), yet at one rank it communicates "
                       "nothing",
                       subject, ms(cost->measured_step_ms), ms(cost->plain_step_ms), pct(cost->fraction()));
  if (cost) return subject + " costs " + cost_sentence(*cost);
  return fmt::format("{} costs at least {} of the step ({} of {} ms exposed communication; what overlap hides is not "
                     "calibrated: give --calibrate-steps and a --warmup that holds them)",
                     subject, pct(E / T), ms(E), ms(T));
}

}  // namespace

Verdict diagnose(const RunReport& report, const PeakTable* peak, const VerdictThresholds& th) {
  const StepBreakdown b = summarize_steps(report);
  const RunConfig& c = report.config;
  const double T = b[Phase::total].median;
  const double E = b[Phase::exposed_comm].median;
  const double data_wait = b[Phase::data_wait].median;
  const double copy = b[Phase::h2d_copy].median;
  const double I = data_wait + copy;
  const double C = b[Phase::forward].median + b[Phase::backward].median + b[Phase::optimizer].median;

  std::vector<double> busy;
  bool all_busy = true;
  for (const RankRun& rank : report.ranks)
    for (const StepRecord& step : rank.steps) {
      if (step.gpu_busy_ms) busy.push_back(*step.gpu_busy_ms);
      else all_busy = false;
    }
  const bool have_busy = all_busy && !busy.empty();
  const double gpu_busy = have_busy ? median_of(busy) : 0;
  const double G = have_busy ? std::max(0.0, T - gpu_busy - E - I) : 0;

  const bool ddp_on_one_gpu = c.world == 1 && c.ddp;
  // At world 1 all of DDP's cost is communication's to remove (run without --ddp): the calibrated cost, hidden
  // part included, decides the bound there; with several ranks the exposed part does (the rest is the price of
  // data parallelism, stated in a note).
  const double comm_share = ddp_on_one_gpu && b.ddp_cost ? std::max(0.0, b.ddp_cost->fraction()) : E / T;
  Verdict v;
  v.bound = Bound::compute;
  v.fraction = C / T;
  const std::pair<Bound, double> candidates[] = {
      {Bound::communication, comm_share >= th.exposed_comm ? comm_share : -1},
      {Bound::input, I / T >= th.input ? I / T : -1},
      {Bound::launch, have_busy && G / T >= th.launch ? G / T : -1}};
  double best = 0;
  for (const auto& [bound, share] : candidates)
    if (share > best) {
      best = share;
      v.bound = bound;
      v.fraction = share;
    }

  const bool cpu_engine = !report.ranks.empty() && report.ranks.front().info.device_name == "cpu";
  const Link link = classify_link(report);
  const std::vector<BucketRecord>& buckets = bucket_layout(report);
  const size_t buckets_per_step = buckets.size();  // 0 when no step sampled its buckets
  double grad_mb = 0;  // fp32 gradients the buckets cover, in the MB of --bucket-mb (2^20 bytes)
  for (const BucketRecord& bucket : buckets)
    grad_mb += static_cast<double>(bucket.elements) * 4 / (1024.0 * 1024.0);
  switch (v.bound) {
    case Bound::communication:
      if (ddp_on_one_gpu) {
        v.finding = one_rank_cost(b.ddp_cost, E, T, cpu_engine);
        v.advice = "run without --ddp";
      } else if (!c.overlap) {
        v.finding = fmt::format("--no-overlap is set and communication is {} of the step ({} of {} ms)", pct(E / T),
                                ms(E), ms(T));
        v.advice = "drop it, so buckets overlap the backward pass";
      } else {
        v.finding = fmt::format("Exposed communication is {} of the step ({} of {} ms) and {}", pct(E / T), ms(E),
                                ms(T), link.description);
        v.advice = communication_advice(c, link, buckets_per_step, grad_mb);
      }
      break;
    case Bound::input:
      v.finding = fmt::format("Waiting for input is {} of the step ({} of {} ms: {} data wait, {} copy)", pct(I / T),
                              ms(I), ms(T), ms(data_wait), ms(copy));
      v.advice = data_wait >= copy ? fmt::format("raise --workers (now {})", c.workers)
                                   : "the host-to-device copy is not hidden: let the copy stream run a batch ahead "
                                     "from pinned memory";
      break;
    case Bound::launch:
      v.finding = fmt::format("The GPU is idle {} of the step between kernels ({} of {} ms; kernels run {} ms)",
                              pct(G / T), ms(G), ms(T), ms(gpu_busy));
      v.advice = "the CPU cannot launch kernels fast enough: try --cuda-graph on to replay the captured step";
      break;
    case Bound::compute:
      v.finding = fmt::format(
          "Compute bounds the step: forward, backward and optimizer are {} of it ({} of {} ms; exposed "
          "communication {}, input {})",
          pct(C / T), ms(C), ms(T), pct(E / T), pct(I / T));
      if (cpu_engine)
        v.advice = "the CPU engine computes in fp32 on OpenBLAS: train on a GPU (--device cuda) for speed";
      else if (c.bf16_precision())
        v.advice = "communication and input are hidden; only faster kernels or a larger --batch raise throughput";
      else
        v.advice = fmt::format("try --precision bf16 (tensor cores; now {})", c.precision);
      break;
  }

  if (ddp_on_one_gpu && v.bound != Bound::communication)
    v.notes.push_back(one_rank_cost(b.ddp_cost, E, T, cpu_engine) + ": run without --ddp.");
  if (!ddp_on_one_gpu && c.ddp && b.ddp_cost)
    v.notes.push_back(fmt::format("Against a step without the reducer, DDP costs {}.", cost_sentence(*b.ddp_cost)));
  const double median_rank_total = b[Phase::total].median;
  if (b.ranks.size() > 1 && b.step_ms > (1 + th.straggler) * median_rank_total)
    v.notes.push_back(fmt::format("{} is {} slower than the median rank ({} vs {} ms): every all-reduce waits for it.",
                                  b.straggler, pct(b.step_ms / median_rank_total - 1), ms(b.step_ms),
                                  ms(median_rank_total)));
  if (!b.parts_add_up)
    v.notes.push_back(fmt::format("The measured phases miss the step total by {} on the worst rank: some time is "
                                  "not attributed to any phase.",
                                  pct(b.parts_mismatch)));
  if (peak && !peak->empty() && v.bound == Bound::communication && c.world > 1) {
    const StepCommStats comm = run_comm_stats(report, peak);
    if (comm.pct_of_peak && *comm.pct_of_peak < th.low_pct_of_peak)
      // The peak is taken at each bucket's own size, so size is already accounted for: what is left is time
      // the collective spends waiting for its peers, or sharing the device with the backward pass.
      v.notes.push_back(fmt::format("The buckets reach only {:.0f}% of the link's measured peak bus bandwidth at "
                                    "their sizes ({:.1f} GB/s): a bucket's time includes waiting for the slowest "
                                    "rank to reach the same all-reduce and sharing the device with the backward "
                                    "pass; compare with --no-overlap, and look for a straggler.",
                                    *comm.pct_of_peak, comm.busbw_GBps));
  }
  return v;
}

void to_json(json& j, const Verdict& v) {
  j = json{{"bound", bound_name(v.bound)}, {"fraction", v.fraction}, {"finding", v.finding},
           {"advice", v.advice},           {"notes", v.notes},       {"text", v.text()}};
}

}  // namespace ddpx
