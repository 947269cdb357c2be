// StepBreakdown: where a run's step time went, per rank and across ranks, as a person reads it and as JSON.
// Guarantees:
//  - Per rank, every phase is summarized by its median, min and max over that rank's measured steps (median of an
//    even count is the mean of the two middle values). Across ranks, each phase gets min / median / max of the
//    per-rank medians.
//  - The straggler is the rank with the largest median total (lowest rank on ties); the run's pace is its pace:
//    steps/s = 1000 / straggler median total, images/s = steps/s * batch * grad_accum * world.
//  - parts_add_up is true when, on every rank, the median over steps of |serial parts - total| / total is at most
//    kPartsTolerance (5%); "serial parts" are data_wait + h2d_copy + forward + backward + exposed_comm +
//    optimizer (comm overlaps backward and is not one of them).
//  - With DDP and calibration steps (train --calibrate-steps), ddp_cost holds what DDP costs the step against the
//    calibrated plain step, as parts that add up to the difference (analysis/ddp_cost.hpp); without either it is
//    empty and the table says the cost hidden under overlap is not known.
//  - exposed_comm is communication not covered by compute (torchtitan's definition; report/time_intervals.hpp).
#pragma once
#include <nlohmann/json.hpp>

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/ddp_cost.hpp"
#include "analysis/spread.hpp"
#include "report/step_record.hpp"

namespace ddpx {

enum class Phase { data_wait, h2d_copy, forward, backward, comm, exposed_comm, optimizer, total };
inline constexpr size_t kPhaseCount = 8;
inline constexpr std::array<Phase, kPhaseCount> kAllPhases = {
    Phase::data_wait, Phase::h2d_copy, Phase::forward,   Phase::backward,
    Phase::comm,      Phase::exposed_comm, Phase::optimizer, Phase::total};

std::string_view phase_name(Phase phase);  // "data_wait", "h2d_copy", ..., "total"
double phase_ms(const PhaseTimes& times, Phase phase);

struct RankBreakdown {
  int rank = 0;
  std::string device_name;
  size_t steps = 0;
  std::array<Spread, kPhaseCount> phases;  // indexed by Phase, over this rank's steps
  double parts_mismatch = 0;               // median over steps of |serial parts - total| / total
  const Spread& operator[](Phase phase) const { return phases[static_cast<size_t>(phase)]; }
};

struct StepBreakdown {
  static constexpr double kPartsTolerance = 0.05;

  RunConfig config;
  std::vector<RankBreakdown> ranks;
  std::array<Spread, kPhaseCount> across_ranks;  // min / median / max of the per-rank medians
  int straggler_rank = 0;
  std::string straggler;        // "rank 1 (NVIDIA H200)"
  double step_ms = 0;           // the straggler's median total
  double steps_per_s = 0;
  double images_per_s = 0;
  double parts_mismatch = 0;    // worst rank's parts_mismatch
  bool parts_add_up = true;     // parts_mismatch <= kPartsTolerance
  std::optional<DdpCost> ddp_cost;  // DDP's cost against the calibrated plain step (with --ddp and calibration)

  const Spread& operator[](Phase phase) const { return across_ranks[static_cast<size_t>(phase)]; }
};

// Throws ddpx::Error when the report has no ranks, a rank has no steps, or a step's total is not positive.
StepBreakdown summarize_steps(const RunReport& report);

// The nccl-tests-style table: a '#' header naming the run and the columns, one line per phase, one line per rank,
// then summary lines (straggler, steps/s, images/s, whether the parts add up) and, with DDP, what DDP costs.
std::string format_breakdown(const StepBreakdown& breakdown);

// The breakdown's DDP cost lines: the parts and the two steps they come from, or that the cost is not calibrated.
std::string format_ddp_cost(const std::optional<DdpCost>& cost);

void to_json(nlohmann::json& j, const Spread& value);
void to_json(nlohmann::json& j, const StepBreakdown& value);

}  // namespace ddpx
