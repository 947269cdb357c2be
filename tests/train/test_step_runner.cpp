// The StepRunner's three protocols (Note [One micro-batch body, three step protocols]), checked on the CPU with a
// recording engine and a recording reducer port: the calls each protocol makes and their order, where a
// synchronized micro-batch's spans go with and without a reducer, that a replayed step runs its calls only when
// it captures, and that the data wait is the loader's.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "data/batch_loader.hpp"
#include "data/dataset.hpp"
#include "train/reducer_port.hpp"
#include "train/step_runner.hpp"

namespace ddpx {
namespace {

using Calls = std::vector<std::string>;

// Records every call the runner makes; its backward reports the spans [0, 4) and [4, 8).
class RecordingEngine : public StepEngine, public GraphCapture {
 public:
  explicit RecordingEngine(Calls& calls, bool captures = false) : calls_(calls), captures_(captures) {}
  std::string describe() const override { return "recording engine"; }
  bool is_cuda() const override { return false; }
  float* grad_buffer() override { return nullptr; }
  void* compute_stream() override { return nullptr; }
  GraphCapture* graph_capture() override { return captures_ ? this : nullptr; }
  void upload_params(const float*) override {}
  void download_params(float*) override {}
  HostOptimizerState download_optimizer_state() override { return {}; }
  void upload_optimizer_state(const HostOptimizerState&) override {}
  void* allocate_host_batch(size_t bytes) override { return ::operator new(bytes); }
  void free_host_batch(void* p) override { ::operator delete(p); }
  void set_batch(const HostBatch& batch) override {
    parity_ = micro_batches_++ % 2;
    calls_.push_back("set_batch " + std::to_string(batch.step));
  }
  void batch_consumed(const HostBatch&) override { calls_.push_back("batch_consumed"); }
  void zero_grads() override { calls_.push_back("zero_grads"); }
  void forward_backward(float grad_scale, const ReadyFn& on_ready) override {
    calls_.push_back("forward_backward x" + std::to_string(grad_scale));
    on_ready(0, 4);
    on_ready(4, 8);
  }
  void optimizer_step(int64_t step) override { calls_.push_back("optimizer_step " + std::to_string(step)); }
  void begin_span_updates(int64_t step) override { calls_.push_back("begin_span_updates " + std::to_string(step)); }
  void optimizer_span(size_t begin, size_t end, void* stream, const ReducedGradients*) override {
    calls_.push_back(fmt_span("optimizer_span", begin, end) + (stream ? " on a stream" : ""));
  }
  void finish_span_updates() override { calls_.push_back("finish_span_updates"); }
  float last_loss() override { return 0; }
  std::optional<NumericsProblem> numerics_problem() override { return std::nullopt; }
  std::vector<float> eval_logits(const float*, int64_t) override { return {}; }
  EnginePhaseTimes last_phase_times() override { return {}; }

  // GraphCapture: the graphs of the real engine, per input parity and variant, with no device.
  int input_parity() const override { return parity_; }
  bool has_graph(int parity, GraphVariant variant) const override {
    return graphs_[parity][static_cast<int>(variant)];
  }
  void capture_begin(GraphVariant variant) override {
    calls_.push_back("capture_begin " + std::to_string(static_cast<int>(variant)));
    capturing_ = static_cast<int>(variant);
  }
  void capture_end() override {
    calls_.push_back("capture_end");
    graphs_[parity_][capturing_] = true;
  }
  void capture_abandon() noexcept override { calls_.push_back("capture_abandon"); }
  void replay(int64_t step, GraphVariant variant) override {
    calls_.push_back("replay " + std::to_string(step) + " " + std::to_string(static_cast<int>(variant)));
  }

  static std::string fmt_span(const char* what, size_t begin, size_t end) {
    return std::string(what) + " " + std::to_string(begin) + "-" + std::to_string(end);
  }

 private:
  Calls& calls_;
  bool captures_;
  int parity_ = 0;
  int64_t micro_batches_ = 0;
  int capturing_ = 0;
  bool graphs_[2][kGraphVariants] = {};
};

class RecordingPort : public ReducerPort {
 public:
  explicit RecordingPort(Calls& calls) : calls_(calls) {}
  void begin(bool sync, void*) override { calls_.push_back(sync ? "port.begin sync" : "port.begin no_sync"); }
  void mark_ready(size_t begin, size_t end) override {
    calls_.push_back(RecordingEngine::fmt_span("port.mark_ready", begin, end));
  }
  void finish() override { calls_.push_back("port.finish"); }
  void reduce_whole_buffer(void*) override { calls_.push_back("port.reduce_whole_buffer"); }
  void before_replay() override { calls_.push_back("port.before_replay"); }
  void after_replay(void*) override { calls_.push_back("port.after_replay"); }
  void record_ready_times(bool on) override { calls_.push_back(on ? "port.ready_times on" : "port.ready_times off"); }
  int64_t capturable_from_step() const override { return 0; }
  std::vector<BucketTiming> bucket_timings() override { return {}; }
  std::string describe() const override { return "recording port"; }

 private:
  Calls& calls_;
};

// One runner over a synthetic dataset (one image per batch), from `start_step` on.
struct Rig {
  Rig(ReducerPort& port, StepEngine& engine, int64_t micro_per_step, bool overlap, StepGraphs graphs_in,
      CalibrationSchedule calibration_in = {}, int64_t start_step = 0)
      : dataset(make_dataset(DataSpec{}, DatasetContext{.shape = DataShape{1, 2, 3}})),
        loader(*dataset, 0, 1, 1, start_step * micro_per_step, loader_options(engine)),
        graphs(std::move(graphs_in)),
        calibration(calibration_in),
        runner(engine, loader, port, graphs, calibration, micro_per_step, overlap) {}
  static BatchLoader::Options loader_options(StepEngine& engine) {
    BatchLoader::Options options;
    options.workers = 1;
    options.depth = 2;
    options.allocate = [&engine](size_t bytes) { return engine.allocate_host_batch(bytes); };
    options.deallocate = [&engine](void* p) { engine.free_host_batch(p); };
    return options;
  }
  std::unique_ptr<Dataset> dataset;
  BatchLoader loader;
  StepGraphs graphs;
  CalibrationSchedule calibration;
  StepRunner runner;
};

StepGraphOptions no_graphs() {
  StepGraphOptions options;
  options.cuda_graph = GraphPolicy::off;
  return options;
}

TEST(StepRunner, EagerStepAccumulatesThenSynchronizesThroughThePort) {
  Calls calls;
  RecordingEngine engine(calls);
  RecordingPort port(calls);
  Rig rig(port, engine, /*micro_per_step=*/2, /*overlap=*/false, StepGraphs(no_graphs(), nullptr, 0));
  const StepOutcome outcome = rig.runner.run(1, /*sample_buckets=*/true);
  const Calls expected = {"port.ready_times on", "zero_grads",
                          // the accumulation micro-batch: a port step of its own that communicates nothing
                          "set_batch 0", "port.begin no_sync", "forward_backward x0.500000", "port.mark_ready 0-4",
                          "port.mark_ready 4-8", "port.finish", "batch_consumed",
                          // the synchronized one; the port's finish after it is the communication wait
                          "set_batch 1", "port.begin sync", "forward_backward x0.500000", "port.mark_ready 0-4",
                          "port.mark_ready 4-8", "batch_consumed", "port.finish", "optimizer_step 1"};
  EXPECT_EQ(calls, expected);
  EXPECT_FALSE(outcome.calibration);
  EXPECT_FALSE(outcome.captured);
  EXPECT_GE(outcome.data_wait_ms, 0);
  EXPECT_GE(outcome.comm_wait_ms, 0);
}

TEST(StepRunner, WithoutAReducerTheSynchronizedSpansGoStraightToTheOverlappedOptimizer) {
  Calls calls;
  RecordingEngine engine(calls);
  const std::unique_ptr<ReducerPort> port = make_no_reducer_port(engine, /*span_updates=*/true);
  Rig rig(*port, engine, 2, /*overlap=*/true, StepGraphs(no_graphs(), nullptr, 0));
  rig.runner.run(1, false);
  const Calls expected = {"zero_grads",
                          "set_batch 0", "forward_backward x0.500000", "batch_consumed",  // accumulation: kept
                          "set_batch 1", "begin_span_updates 1", "forward_backward x0.500000",
                          "optimizer_span 0-4", "optimizer_span 4-8", "batch_consumed", "finish_span_updates"};
  EXPECT_EQ(calls, expected);

  // Not overlapped: the port passes nothing on and the optimizer runs over the buffer.
  Calls plain_calls;
  RecordingEngine plain_engine(plain_calls);
  const std::unique_ptr<ReducerPort> plain_port = make_no_reducer_port(plain_engine, /*span_updates=*/false);
  Rig plain(*plain_port, plain_engine, 1, false, StepGraphs(no_graphs(), nullptr, 0));
  plain.runner.run(1, false);
  EXPECT_EQ(plain_calls, (Calls{"zero_grads", "set_batch 0", "forward_backward x1.000000", "batch_consumed",
                                "optimizer_step 1"}));
}

TEST(StepRunner, CalibrationStepsRunTheBackwardWithoutThePortThenReduceTheWholeBuffer) {
  Calls calls;
  RecordingEngine engine(calls);
  RecordingPort port(calls);
  CalibrationSchedule calibration;
  calibration.first_step = 2;
  calibration.last_step = 2;
  Rig rig(port, engine, 2, /*overlap=*/true, StepGraphs(no_graphs(), nullptr, 0), calibration, /*start_step=*/1);
  const StepOutcome outcome = rig.runner.run(2, true);
  // Whatever the overlap: the optimizer once over the buffer after the reduction (Note [Calibration steps]).
  const Calls expected = {"port.ready_times off", "zero_grads",
                          "set_batch 2", "forward_backward x0.500000", "batch_consumed",
                          "set_batch 3", "forward_backward x0.500000", "batch_consumed",
                          "port.reduce_whole_buffer", "optimizer_step 2"};
  EXPECT_EQ(calls, expected);
  EXPECT_TRUE(outcome.calibration);
  EXPECT_FALSE(outcome.captured);
  EXPECT_GE(outcome.calibration_reduce_ms, 0);
}

TEST(StepRunner, AReplayedStepRunsTheEagerCallsOnlyWhenItCapturesThem) {
  Calls calls;
  RecordingEngine engine(calls, /*captures=*/true);
  RecordingPort port(calls);
  StepGraphOptions options;  // --cuda-graph auto, SGD, no accumulation, --warmup 5
  options.optimizer.kind = OptimizerKind::sgd;
  StepGraphs graphs(options, engine.graph_capture(), 0);
  ASSERT_TRUE(graphs.enabled);
  ASSERT_EQ(graphs.first_step, 4);
  Rig rig(port, engine, 1, /*overlap=*/false, std::move(graphs), {}, /*start_step=*/3);
  // Step 4 captures parity 0's graph: the eager step's calls, between capture_begin and capture_end.
  EXPECT_TRUE(rig.runner.run(4, false).captured);
  const Calls captured = {"port.ready_times off", "set_batch 3", "port.before_replay", "capture_begin 0",
                          "zero_grads", "port.begin sync", "forward_backward x1.000000", "port.mark_ready 0-4",
                          "port.mark_ready 4-8", "port.finish", "optimizer_step 4", "capture_end", "replay 4 0",
                          "port.after_replay", "batch_consumed"};
  EXPECT_EQ(calls, captured);
  // Step 5 captures parity 1's; step 6 replays parity 0's without running a call of the step.
  EXPECT_TRUE(rig.runner.run(5, false).captured);
  calls.clear();
  EXPECT_FALSE(rig.runner.run(6, false).captured);
  EXPECT_EQ(calls, (Calls{"port.ready_times off", "set_batch 5", "port.before_replay", "replay 6 0",
                          "port.after_replay", "batch_consumed"}));
}

TEST(StepRunner, GraphsAreOnlyPlannedForAnEngineThatCaptures) {
  Calls calls;
  RecordingEngine cpu_like(calls, /*captures=*/false);
  StepGraphOptions options;
  options.optimizer.kind = OptimizerKind::sgd;
  EXPECT_FALSE(StepGraphs(options, cpu_like.graph_capture(), 0).enabled);
  options.cuda_graph = GraphPolicy::on;
  EXPECT_THROW(StepGraphs(options, cpu_like.graph_capture(), 0), Error);
}

}  // namespace
}  // namespace ddpx
