// Reading a one-rank run report into the step ddpx predict simulates (see measured_step.hpp).
#include "predict/measured_step.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.hpp"

namespace ddpx::predict {
namespace {

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

struct BucketMedians {
  int64_t elements = 0;
  double ready_ms = 0, own_ms = 0;
};

// Per bucket index, medians over the steps that sampled their buckets.
std::vector<BucketMedians> bucket_medians(const RankRun& rank) {
  std::map<int, std::vector<double>> ready, own;
  std::map<int, int64_t> elements;
  for (const StepRecord& step : rank.steps)
    for (const BucketRecord& b : step.buckets) {
      ready[b.index].push_back(b.launch_ms);
      own[b.index].push_back(b.end_ms - b.start_ms);
      elements[b.index] = b.elements;
    }
  std::vector<BucketMedians> out;
  for (const auto& [index, times] : ready) out.push_back({elements[index], median(times), median(own[index])});
  return out;
}

OwnCostModel fit_own_cost(const std::vector<BucketMedians>& buckets) {
  OwnCostModel model;
  if (buckets.empty()) return model;
  model.measured = true;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const double n = static_cast<double>(buckets.size());
  for (const BucketMedians& b : buckets) {
    const double x = static_cast<double>(b.elements), y = std::max(0.0, b.own_ms);
    sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  const double determinant = n * sxx - sx * sx;
  if (buckets.size() >= 2 && determinant > 1e-9 * sxx * n) {
    model.per_element_ms = (n * sxy - sx * sy) / determinant;
    model.fixed_ms = (sy - model.per_element_ms * sx) / n;
  }
  if (buckets.size() < 2 || determinant <= 1e-9 * sxx * n || model.fixed_ms < 0 || model.per_element_ms < 0) {
    model.fixed_ms = 0;
    model.per_element_ms = sx > 0 ? sy / sx : 0;
  }
  return model;
}

}  // namespace

BucketPlan bucket_plan_of(const std::vector<GradientTensorInfo>& tensors, double cap_mb, double first_cap_mb) {
  DDPX_REQUIRE(cap_mb > 0 && first_cap_mb > 0, "--bucket-cap-mb {} / first bucket {} MB: caps must be positive",
               cap_mb, first_cap_mb);
  std::vector<GradTensor> grads;
  grads.reserve(tensors.size());
  for (const GradientTensorInfo& t : tensors)
    grads.push_back({t.name, static_cast<size_t>(t.offset), static_cast<size_t>(t.numel), t.shape});
  return BucketPlan(std::move(grads), BucketPlanOptions::from_mb(cap_mb, first_cap_mb));
}

CommHookSpec predicted_hook(std::string_view text, std::string_view flag) {
  const CommHookSpec hook = wire_shape(parse_comm_hook_spec(text, {}, flag));
  DDPX_REQUIRE(hook.args.empty() || hook.args.front() <= 1024,
               "{} '{}': PowerSGD's rank R is at most 1024 in ddpx predict", flag, text.substr(0, 60));
  return hook;
}

MeasuredStep measure_step(const RunReport& report, const std::string& file) {
  const RunConfig& c = report.config;
  DDPX_REQUIRE(c.world == 1 && report.ranks.size() == 1,
               "report {}: a run of {} ranks (config.world); ddpx predict starts from a one-rank run, whose step "
               "has no real communication in it: record one with `ddpx train --ddp --report FILE` on one GPU or "
               "rank", file, c.world);
  DDPX_REQUIRE(c.grad_accum == 1, "report {}: config.grad_accum is {}; ddpx predict models one all-reduce per "
               "step: record the run without --grad-accum", file, c.grad_accum);
  DDPX_REQUIRE(!c.gradient_tensors.empty(),
               "report {}: missing field config.gradient_tensors (the gradient buffer's tensors, which ddpx predict "
               "re-cuts into buckets): the report was written by an older ddpx; record it again with this one "
               "(`ddpx train ... --report FILE`)", file);
  const RankRun& rank = report.ranks.front();
  DDPX_REQUIRE(!rank.steps.empty(), "report {}: no measured steps (ranks[0].steps is empty): run more --steps than "
               "--warmup", file);
  MeasuredStep m;
  m.file = file;
  m.model = c.model;
  m.precision = c.precision;
  m.bf16_weight_grads = c.bf16_weight_grads();
  m.device = rank.info.device_name;
  m.ddp = c.ddp;
  m.hook = predicted_hook(c.hook, "report " + file + ": config.hook");
  m.bucket_mb = c.bucket_mb;
  m.first_bucket_mb = c.first_bucket_mb;
  m.overlap = c.overlap;
  m.batch = c.batch;
  m.tensors = c.gradient_tensors;
  std::vector<double> data, h2d, forward, backward, optimizer, exposed;
  for (const StepRecord& s : rank.steps) {
    const PhaseTimes& p = s.phases;
    data.push_back(p.data_wait_ms), h2d.push_back(p.h2d_copy_ms), forward.push_back(p.forward_ms);
    backward.push_back(p.backward_ms), optimizer.push_back(p.optimizer_ms), exposed.push_back(p.exposed_comm_ms);
  }
  m.data_wait_ms = median(data), m.h2d_copy_ms = median(h2d), m.forward_ms = median(forward);
  m.backward_ms = median(backward), m.optimizer_ms = median(optimizer);
  m.measured_exposed_ms = median(exposed);
  DDPX_REQUIRE(m.backward_ms > 0, "report {}: the median backward time (ranks[0].steps[].phases.backward_ms) is {} "
               "ms; a step without a backward pass cannot be predicted", file, m.backward_ms);
  m.steps_per_s = report_steps_per_s(report);
  DDPX_REQUIRE(m.steps_per_s > 0 && std::isfinite(m.steps_per_s), "report {}: no throughput (throughput.steps_per_s "
               "or the steps' total_ms)", file);
  // Everything of the measured step that is neither a phase nor exposed communication: the time between recorded
  // steps too (progress lines, the loader hand-over), so that compute_ms() + exposed is the measured step.
  m.other_ms = std::max(0.0, 1000.0 / m.steps_per_s - (m.data_wait_ms + m.h2d_copy_ms + m.forward_ms +
                                                         m.backward_ms + m.optimizer_ms + m.measured_exposed_ms));

  const std::vector<BucketMedians> buckets = bucket_medians(rank);
  m.measured_buckets = static_cast<int>(buckets.size());
  m.own = fit_own_cost(buckets);
  // Interpolation points: (gradient elements final, ms from backward start).
  std::vector<std::pair<double, double>> points{{0.0, 0.0}};
  const BucketPlan plan = bucket_plan_of(m.tensors, m.bucket_mb, m.first_bucket_mb);
  std::vector<double> cumulative(m.tensors.size());
  double elements = 0;
  for (size_t i = 0; i < m.tensors.size(); ++i) cumulative[i] = elements += static_cast<double>(m.tensors[i].numel);
  if (!buckets.empty()) {
    DDPX_REQUIRE(buckets.size() == plan.size(),
                 "report {}: {} buckets were timed, but its gradient_tensors cut at bucket_mb {} (first {}) give {}: "
                 "the report's fields disagree; record it again", file, buckets.size(), m.bucket_mb,
                 m.first_bucket_mb, plan.size());
    for (size_t b = 0; b < plan.size(); ++b)
      DDPX_REQUIRE(buckets[b].elements == static_cast<int64_t>(plan[b].numel()),
                   "report {}: bucket {} holds {} elements, but gradient_tensors at bucket_mb {} give {}: the "
                   "report's fields disagree; record it again", file, b, buckets[b].elements, m.bucket_mb,
                   plan[b].numel());
  }
  if (!buckets.empty() && m.overlap) {
    m.ready_times_measured = true;
    const double last_ready = buckets.back().ready_ms;
    for (size_t b = 0; b < plan.size(); ++b) {
      const double ready = std::clamp(m.backward_ms - (last_ready - buckets[b].ready_ms), 0.0, m.backward_ms);
      points.emplace_back(cumulative[plan[b].end_tensor - 1], std::max(ready, points.back().second));
    }
    points.back().second = m.backward_ms;
  } else {
    points.emplace_back(elements, m.backward_ms);
  }
  m.tensor_ready_ms.resize(m.tensors.size());
  size_t segment = 1;
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    while (segment + 1 < points.size() && points[segment].first < cumulative[i]) ++segment;
    const auto [x0, y0] = points[segment - 1];
    const auto [x1, y1] = points[segment];
    const double t = x1 > x0 ? std::clamp((cumulative[i] - x0) / (x1 - x0), 0.0, 1.0) : 1.0;
    m.tensor_ready_ms[i] = y0 + t * (y1 - y0);
  }
  return m;
}

}  // namespace ddpx::predict
