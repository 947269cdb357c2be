// RunRecorder's host side of Note [One clock for all ranks] for CUDA steps (train/run_report.cpp), on the CPU: a
// stand-in engine reports phase times a step late, each with the step it is of and its device start, as the CUDA
// engine does. A step's record ends up with its own times and its device start on the run clock; the step whose
// times never arrive keeps the previous step's durations as a stand-in and no device start; the trace drawn from
// the records passes the checker with every device-timed step at its GPU start.
#include <gtest/gtest.h>

#include <deque>
#include <string>

#include "model/vit/vit_layout.hpp"
#include "model/vit/vit_config.hpp"
#include "analysis/trace_writer.hpp"
#include "dist/job.hpp"
#include "train/reducer_port.hpp"
#include "train/run_report.hpp"
#include "train/step_engine.hpp"

namespace ddpx {
namespace {

// Only what RunRecorder asks: is_cuda() and last_phase_times(), which hands out the queued times in order.
class LateTimesEngine : public StepEngine {
 public:
  std::deque<EnginePhaseTimes> queued;
  std::string describe() const override { return "late-times test engine"; }
  bool is_cuda() const override { return true; }
  float* grad_buffer() override { return nullptr; }
  void* compute_stream() override { return nullptr; }
  void upload_params(const float*) override {}
  void download_params(float*) override {}
  HostOptimizerState download_optimizer_state() override { return {}; }
  void upload_optimizer_state(const HostOptimizerState&) override {}
  void* allocate_host_batch(size_t) override { return nullptr; }
  void free_host_batch(void*) override {}
  void set_batch(const HostBatch&) override {}
  void batch_consumed(const HostBatch&) override {}
  void zero_grads() override {}
  void forward_backward(float, const ReadyFn&) override {}
  void optimizer_step(int64_t) override {}
  void begin_span_updates(int64_t) override {}
  void optimizer_span(size_t, size_t, void*, const ReducedGradients*) override {}
  void finish_span_updates() override {}
  float last_loss() override { return 0; }
  std::optional<NumericsProblem> numerics_problem() override { return std::nullopt; }
  std::vector<float> eval_logits(const float*, int64_t) override { return {}; }
  EnginePhaseTimes last_phase_times() override {
    EnginePhaseTimes t = queued.front();
    queued.pop_front();
    return t;
  }
};

// Step `step`'s device times: forward 10 + step ms, so each step's own are recognisable; started at `start`.
EnginePhaseTimes times_of(int64_t step, double start) {
  EnginePhaseTimes t;
  t.h2d_copy = 0.5;
  t.forward = 10 + static_cast<double>(step);
  t.backward = 20;
  t.optimizer = 2;
  t.device_total = t.h2d_copy + t.forward + t.backward + t.optimizer + 1.5;  // 1.5 ms waiting for gradients
  t.step = step;
  t.device_start_steady_ms = start;
  return t;
}

TEST(DeviceStepTimes, EachRecordGetsItsOwnStepsTimesAndDeviceStart) {
  TrainOptions options;
  options.model = "vit_tiny_test";
  options.warmup_steps = 1;
  const VitLayout layout(parse_vit_spec(options.model));
  DistJob job{DistJobOptions{}};  // a single process: the run clock is this process's, from its run start
  LateTimesEngine engine;
  const std::unique_ptr<ReducerPort> no_reducer = make_no_reducer_port(engine, /*span_updates=*/false);
  RunRecorder recorder(options, job, layout, RunSettings(options, layout, {}));
  // The engine's times at the end of step k are step k-1's. Step 1 is warm-up (never asked).
  const double s2 = 1.0e6, s3 = s2 + 40;
  engine.queued = {times_of(1, s2 - 39), times_of(2, s2), times_of(3, s3)};
  for (int64_t step = 1; step <= 4; ++step) {
    recorder.begin_step(step);
    recorder.end_step(step, /*data_wait_ms=*/0.25, /*comm_wait_ms=*/0, /*host_total_ms=*/5.0, engine, *no_reducer);
  }
  const std::vector<StepRecord>& steps = recorder.rank_run().steps;
  ASSERT_EQ(steps.size(), 3u);  // steps 2, 3, 4
  for (size_t i = 0; i < 2; ++i) {
    const StepRecord& r = steps[i];
    SCOPED_TRACE(r.step);
    EXPECT_EQ(r.phases.forward_ms, 10 + static_cast<double>(r.step));  // its own, not the step before's
    EXPECT_NEAR(r.phases.exposed_comm_ms, 1.5, 1e-12);
    EXPECT_NEAR(r.phases.total_ms, 0.25 + r.phases.h2d_copy_ms + r.phases.forward_ms + 20 + 2 + 1.5, 1e-12);
    ASSERT_TRUE(r.device_start_ms.has_value());
  }
  // Device starts keep their spacing on the run clock.
  EXPECT_NEAR(*steps[1].device_start_ms - *steps[0].device_start_ms, s3 - s2, 1e-9);
  // Step 4's times never arrived: step 3's durations stand in, and it has no device start (drawn at host time).
  EXPECT_EQ(steps[2].phases.forward_ms, 13.0);
  EXPECT_FALSE(steps[2].device_start_ms.has_value());

  RankInfo info;
  TraceWriter writer;
  writer.add_rank(info, steps);
  const nlohmann::json trace = writer.to_json();
  EXPECT_EQ(check_trace(trace), std::vector<std::string>{});
  for (const nlohmann::json& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["name"] == "Batch 2") {
      EXPECT_NEAR(e["ts"].get<double>(), *steps[0].device_start_ms * 1e3, 1e-3);
      EXPECT_EQ(e["args"]["timeline"], "device");
    }
  }
}

}  // namespace
}  // namespace ddpx
