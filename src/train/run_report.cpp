// RunRecorder implementation; see run_report.hpp.
#include "train/run_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "dist/communicator.hpp"
#include "analysis/ddp_cost.hpp"
#include "report/rank_reports.hpp"
#include "analysis/step_breakdown.hpp"
#include "analysis/trace_writer.hpp"
#include "analysis/verdict.hpp"
#include "train/step_engine.hpp"
#include "train/train_summary.hpp"

namespace ddpx {
namespace {

// The engine's phase durations into a record's phases (data wait, exposed comm and total are the caller's).
void copy_engine_phases(PhaseTimes& p, const EnginePhaseTimes& t) {
  p.h2d_copy_ms = t.h2d_copy;
  p.forward_ms = t.forward;
  p.backward_ms = t.backward;
  p.optimizer_ms = t.optimizer;
}

// CUDA: the compute stream's phases run back to back except for its wait for the reducer between the end of
// backward and the optimizer, so the device time the phases leave over is that wait.
double compute_stream_wait_ms(const EnginePhaseTimes& t) {
  return std::max(0.0, t.device_total - t.h2d_copy - t.forward - t.backward - t.optimizer);
}
double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
// How this rank reaches its peers, in NCCL's log vocabulary where it can be known without parsing the log:
// NCCL_P2P_DISABLE=1 forces host shared memory (SHM), the seed's PCIe case; otherwise NCCL uses peer-to-peer
// (NVLink or PCIe P2P) between GPUs of one node. MPI runs on host memory.
std::string link_description(const TrainOptions& options, const DistJob& job) {
  if (job.world() == 1) return "";
  // The backend that carries the gradients: a Gloo run is not an MPI one.
  if (options.device == Device::cpu)
    return job.communicator().backend_name() == "gloo" ? "Gloo (TCP, host memory)" : "MPI (host memory)";
  const char* p2p_disabled = std::getenv("NCCL_P2P_DISABLE");
  if (p2p_disabled && std::string(p2p_disabled) == "1") return "SHM/direct/direct (NCCL_P2P_DISABLE=1)";
  return "P2P (NCCL peer-to-peer, predicted)";
}

}  // namespace

RunRecorder::RunRecorder(const TrainOptions& options, DistJob& job, const FlatLayout& layout,
                         const RunSettings& settings)
    : options_(options),
      job_(job),
      with_reducer_(job.data_parallel()),
      config_(settings.report_config()),
      first_measured_step_(0) {
  for (const TensorSlot& slot : layout.tensors())
    config_.gradient_tensors.push_back({slot.name, slot.shape, static_cast<int64_t>(slot.offset),
                                        static_cast<int64_t>(slot.numel)});
  config_.workers = options.workers;  // until set_loader_workers() says what it resolved to
  stamp_run_start(config_);
  run_.info.host = host_name();
  run_.info.rank = job.rank();
  run_.info.world_size = job.world();
  run_.info.precision = precision_name(options.precision);
  run_.info.device_name = device_name(options.device);
  run_.info.transport = link_description(options, job);
  // The run clock (Note [One clock for all ranks]): this rank's offset to rank 0, measured when the job opened,
  // and its zero at rank 0's run start, now (a broadcast from rank 0, under the watchdog).
  job.restart_run_clock();
  run_.info.clock = ClockAlignment{job.clock_offset().offset_ms, job.clock_offset().uncertainty_ms};
}

double RunRecorder::run_clock_ms(double steady_ms) const { return job_.on_run_clock(steady_ms); }

void RunRecorder::apply_device_times(StepRecord& record, const EnginePhaseTimes& t, double host_total_ms) const {
  PhaseTimes& p = record.phases;
  copy_engine_phases(p, t);
  // The compute stream's wait for the reducer is the exposed communication. Device time plus the host's wait for
  // data is the step.
  p.exposed_comm_ms = compute_stream_wait_ms(t);
  p.total_ms = std::max(host_total_ms, t.device_total + p.data_wait_ms);
  if (record.buckets.empty()) p.comm_ms = p.exposed_comm_ms;
  if (t.device_start_steady_ms) record.device_start_ms = run_clock_ms(*t.device_start_steady_ms);
}

void RunRecorder::begin_step(int64_t step) {
  if (first_measured_step_ == 0) first_measured_step_ = step + options_.warmup_steps;
}

void RunRecorder::end_step(int64_t step, double data_wait_ms, double comm_wait_ms, double host_total_ms,
                           StepEngine& engine, ReducerPort& reducer) {
  if (step < first_measured_step_) return;
  StepRecord record;
  record.step = step;
  record.start_ms = run_clock_ms(now_ms() - host_total_ms);
  const EnginePhaseTimes t = engine.last_phase_times();
  // CUDA: the engine's times are of a completed step, the one before this (t.step). That step's record, pushed
  // last time with a stand-in, gets its own times and its device start now; see Note [One clock for all ranks].
  const bool device_times = engine.is_cuda() && t.device_total > 0;
  if (device_times && t.step > 0 && t.step != step && !run_.steps.empty() && run_.steps.back().step == t.step)
    apply_device_times(run_.steps.back(), t, previous_host_total_ms_);
  previous_host_total_ms_ = host_total_ms;
  PhaseTimes& p = record.phases;
  p.data_wait_ms = data_wait_ms;
  if (device_times) {
    // Until this step's own times arrive (next step), the previous step's stand in for them.
    apply_device_times(record, t, host_total_ms);
  } else {
    copy_engine_phases(p, t);
    p.exposed_comm_ms = comm_wait_ms;
    p.total_ms = host_total_ms;
  }
  // Bucket timings synchronize with the step's last bucket: sample them only at progress lines.
  if (samples_buckets(step, engine.is_cuda())) {
    for (const BucketTiming& b : reducer.bucket_timings()) {
      BucketRecord r;
      r.index = static_cast<int>(b.bucket);
      r.bytes = static_cast<int64_t>(b.bytes);
      r.elements = static_cast<int64_t>(b.elements);
      r.hook = options_.comm_hook.text();
      r.launch_ms = b.ready_ms;
      r.start_ms = b.start_ms;
      r.end_ms = b.end_ms;
      record.buckets.push_back(r);
    }
  }
  // Exposed communication is communication not covered by compute (torchtitan's definition, docs/cli.md). CUDA:
  // the compute stream's phases run back to back except for its wait for the reducer, so that wait above is
  // exactly the comm time no compute covers. CPU: the buckets' intervals minus the compute before them, forward
  // and backward, which begin at the reducer's begin_step (the buckets' clock origin).
  if (!engine.is_cuda() && !record.buckets.empty())
    p.exposed_comm_ms = exposed_comm_ms(record.buckets, t.forward + t.backward);
  if (!record.buckets.empty()) {
    p.comm_ms = comm_window_ms(record.buckets);
  } else {
    p.comm_ms = p.exposed_comm_ms;
  }
  if (!engine.is_cuda()) p.comm_ms = std::max(p.comm_ms, comm_wait_ms);
  if (device_times && t.step != step) record.device_start_ms.reset();  // a stand-in's start is not this step's
  run_.steps.push_back(std::move(record));
}

void RunRecorder::record_calibration(int64_t step, double data_wait_ms, double reduce_host_ms, double host_total_ms,
                                     const EnginePhaseTimes& t, bool cuda_engine) {
  CalibrationRecord record;
  record.step = step;
  PhaseTimes& p = record.plain;
  p.data_wait_ms = data_wait_ms;
  copy_engine_phases(p, t);
  if (cuda_engine) {
    if (t.device_total <= 0) return;  // no events of that step (cannot happen after a completed step)
    record.reduce_ms = compute_stream_wait_ms(t);
    // As a measured step's total: the device's time plus the data wait, or the host's when it enqueued slower
    // (host_total_ms is 0 for a step that captured its graph: capture is not step time).
    p.total_ms = std::max(t.device_total - record.reduce_ms + data_wait_ms, host_total_ms - reduce_host_ms);
  } else {
    record.reduce_ms = reduce_host_ms;
    p.total_ms = host_total_ms - reduce_host_ms;
  }
  if (p.total_ms <= 0) return;
  run_.calibration.push_back(record);
}

void RunRecorder::record_loss(int64_t step, double loss) { run_.losses.push_back({step, loss}); }

void RunRecorder::record_eval(int64_t step, std::optional<double> epoch, const EvalResult& result, bool average) {
  evaluations_.push_back({step, epoch, result.loss, result.top1, result.top5, result.count, average ? "ema" : "model"});
}

void RunRecorder::finish(const TrainSummary& summary, bool print) {
  RunReport report;
  report.config = config_;
  report.evaluations = evaluations_;
  report.attempts = attempts_;
  if (summary.steps_per_s > 0 && summary.images_per_s > 0)
    report.throughput = RunThroughput{summary.steps_per_s, summary.images_per_s};
  StringGather gather;
  if (job_.world() > 1)
    gather = [&](const std::string& mine) { return job_.gather_strings(mine, "the run report's gather"); };
  report.ranks = gather_rank_runs(run_, gather);
  if (!job_.lead()) return;
  const bool have_steps_for_cost = std::all_of(report.ranks.begin(), report.ranks.end(),
                                               [](const RankRun& r) { return !r.steps.empty(); });
  if (have_steps_for_cost) report.ddp_cost = ddp_cost_of(report);
  const bool have_steps = std::any_of(report.ranks.begin(), report.ranks.end(),
                                      [](const RankRun& r) { return !r.steps.empty(); });
  if (print && have_steps) {
    fmt::print("\n{}\n", format_breakdown(summarize_steps(report)));
    fmt::print("verdict: {}\n", diagnose(report).text());
  }
  if (!options_.report.empty()) save_run_report(report, options_.report);
  if (!options_.trace.empty()) {
    TraceWriter trace;
    trace.add_report(report);
    trace.write(options_.trace);
  }
}

}  // namespace ddpx
