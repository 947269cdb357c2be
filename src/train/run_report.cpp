// RunRecorder implementation; see run_report.hpp.
#include "train/run_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>

#include "core/error.hpp"
#include "train/step_engine.hpp"
#include "train/trainer.hpp"

namespace ddpx {
namespace {
double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

RunRecorder::RunRecorder(const TrainOptions& options, const DistContext& dist, const ParamLayout& layout)
    : options_(options), dist_(dist), first_measured_step_(0) {
  (void)layout;
  config_.model = options.model;
  config_.batch = options.batch;
  config_.precision = options.precision;
  config_.hook = options.comm_hook;
  config_.bucket_mb = options.bucket_mb;
  config_.first_bucket_mb = options.first_bucket_mb;
  config_.overlap = !options.no_overlap;
  config_.grad_accum = static_cast<int>(options.grad_accum);
  config_.world = dist.world;
  config_.ddp = dist.reducer != nullptr;
  config_.workers = options.workers;
  run_.info.rank = dist.rank;
  run_.info.world_size = dist.world;
  run_.info.precision = options.precision;
  run_.info.device_name = options.device;
  run_start_ms_ = now_ms();
}

void RunRecorder::begin_step(int64_t step) {
  if (first_measured_step_ == 0) first_measured_step_ = step + options_.warmup_steps;
}

void RunRecorder::end_step(int64_t step, double data_wait_ms, double comm_wait_ms, double host_total_ms,
                           StepEngine& engine, DistContext& dist) {
  (void)dist;
  if (step < first_measured_step_) return;
  StepRecord record;
  record.step = step;
  record.start_ms = now_ms() - run_start_ms_ - host_total_ms;
  EnginePhaseTimes t = engine.last_phase_times();
  record.phases.data_wait_ms = data_wait_ms;
  record.phases.h2d_copy_ms = t.h2d_copy;
  record.phases.forward_ms = t.forward;
  record.phases.backward_ms = t.backward;
  record.phases.optimizer_ms = t.optimizer;
  record.phases.comm_ms = comm_wait_ms;
  record.phases.exposed_comm_ms = comm_wait_ms;
  record.phases.total_ms = host_total_ms;
  run_.steps.push_back(std::move(record));
}

void RunRecorder::finish(const TrainSummary& summary, bool print) {
  (void)summary;
  if (print && !run_.steps.empty()) {
    auto median = [&](auto field) {
      std::vector<double> v;
      for (const auto& s : run_.steps) v.push_back(field(s.phases));
      std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
      return v[v.size() / 2];
    };
    const double total = median([](const PhaseTimes& p) { return p.total_ms; });
    fmt::print("step breakdown (median of {} measured steps, rank 0):\n", run_.steps.size());
    auto row = [&](const char* name, double ms) {
      fmt::print("  {:<22} {:9.3f} ms  {:5.1f}%\n", name, ms, total > 0 ? 100 * ms / total : 0.0);
    };
    row("data wait", median([](const PhaseTimes& p) { return p.data_wait_ms; }));
    row("forward", median([](const PhaseTimes& p) { return p.forward_ms; }));
    row("backward", median([](const PhaseTimes& p) { return p.backward_ms; }));
    row("exposed communication", median([](const PhaseTimes& p) { return p.exposed_comm_ms; }));
    row("optimizer", median([](const PhaseTimes& p) { return p.optimizer_ms; }));
    row("step total", total);
  }
  if (!options_.report.empty() && dist_.rank == 0) {
    RunReport report;
    report.config = config_;
    report.ranks.push_back(run_);
    nlohmann::json j;
    to_json(j, report);
    std::ofstream out(options_.report);
    DDPX_REQUIRE(out.good(), "--report {}: cannot open for writing", options_.report);
    out << j.dump(1) << "\n";
  }
}

}  // namespace ddpx
