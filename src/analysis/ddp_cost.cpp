// DDP's cost against the calibrated plain step (see ddp_cost.hpp).
#include "analysis/ddp_cost.hpp"

#include <algorithm>
#include <vector>

#include "analysis/spread.hpp"

namespace ddpx {
namespace {

struct RankCost {
  double measured = 0, plain = 0, exposed = 0, hook_work = 0;
  bool hook_work_sampled = false;  // some step timed its buckets
};

RankCost rank_cost(const RankRun& run) {
  RankCost out;
  std::vector<double> totals, exposed, hook_work, plain;
  for (const StepRecord& step : run.steps) {
    totals.push_back(step.phases.total_ms);
    exposed.push_back(step.phases.exposed_comm_ms);
    if (!step.buckets.empty())
      hook_work.push_back(std::max(0.0, union_ms(comm_intervals(step.buckets)) - step.phases.exposed_comm_ms));
  }
  for (const CalibrationRecord& record : run.calibration) plain.push_back(record.plain.total_ms);
  out.measured = median_of(totals);
  out.exposed = median_of(exposed);
  out.hook_work_sampled = !hook_work.empty();
  out.hook_work = hook_work.empty() ? 0 : median_of(hook_work);
  out.plain = median_of(plain);
  return out;
}

}  // namespace

std::optional<DdpCost> ddp_cost_of(const RunReport& report) {
  if (!report.config.ddp || report.ranks.empty()) return std::nullopt;
  std::vector<double> measured, plain, exposed, hook_work;
  bool hook_work_sampled = true;
  for (const RankRun& run : report.ranks) {
    if (run.calibration.empty() || run.steps.empty()) return std::nullopt;
    const RankCost cost = rank_cost(run);
    measured.push_back(cost.measured);
    plain.push_back(cost.plain);
    exposed.push_back(cost.exposed);
    hook_work.push_back(cost.hook_work);
    hook_work_sampled = hook_work_sampled && cost.hook_work_sampled;
  }
  DdpCost out;
  out.calibration_steps = static_cast<int64_t>(report.ranks.front().calibration.size());
  out.measured_step_ms = median_of(measured);
  out.plain_step_ms = median_of(plain);
  out.cost_ms = out.measured_step_ms - out.plain_step_ms;
  out.exposed_comm_ms = median_of(exposed);
  out.hook_work_ms = median_of(hook_work);
  out.hook_work_sampled = hook_work_sampled;
  out.other_ms = out.cost_ms - out.exposed_comm_ms - out.hook_work_ms;
  return out;
}

}  // namespace ddpx
