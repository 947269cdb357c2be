// The two ReducerPorts; see reducer_port.hpp.
#include "train/reducer_port.hpp"

#include "core/test_fault.hpp"
#include "ddp/comm_hook.hpp"
#include "ddp/reducer.hpp"
#include "dist/watchdog.hpp"
#include "train/step_engine.hpp"

namespace ddpx {
namespace {

class ReducerOverDdp final : public ReducerPort {
 public:
  ReducerOverDdp(std::unique_ptr<Reducer> reducer, size_t buffer_elems, CommWatchdog& watchdog,
                 std::string description)
      : owned_(std::move(reducer)),
        reducer_(*owned_),
        buffer_elems_(buffer_elems),
        watchdog_(watchdog),
        description_(std::move(description)) {}

  void begin(bool sync, void* compute_stream) override {
    if (sync) test_fault_step(++synchronized_steps_begun_);
    reducer_.begin_step(sync, compute_stream);
  }
  void mark_ready(size_t begin, size_t end) override { reducer_.mark_ready(begin, end); }
  void finish() override {
    reducer_.finish_step();
    watchdog_.throw_if_fired();
  }
  void reduce_whole_buffer(void* compute_stream) override {
    reducer_.set_after_reduce(false);
    begin(true, compute_stream);
    mark_ready(0, buffer_elems_);
    finish();
    reducer_.set_after_reduce(true);
  }
  void before_replay() override { reducer_.before_replay(); }
  void after_replay(void* compute_stream) override { reducer_.after_replay(compute_stream); }
  void record_ready_times(bool on) override { reducer_.set_ready_timing(on); }
  int64_t capturable_from_step() const override { return reducer_.hook().capturable_from_step(); }
  std::vector<BucketTiming> bucket_timings() override { return reducer_.bucket_timings(); }
  std::string describe() const override { return description_; }

 private:
  const std::unique_ptr<Reducer> owned_;
  Reducer& reducer_;
  const size_t buffer_elems_;
  CommWatchdog& watchdog_;
  const std::string description_;
  int64_t synchronized_steps_begun_ = 0;  // the step-K test fault points count these
};

class NoReducer final : public ReducerPort {
 public:
  NoReducer(StepEngine& engine, bool span_updates) : engine_(engine), span_updates_(span_updates) {}

  void begin(bool sync, void*) override { sync_ = sync; }
  void mark_ready(size_t begin, size_t end) override {
    if (span_updates_ && sync_) engine_.optimizer_span(begin, end, nullptr);
  }
  void finish() override {}
  void reduce_whole_buffer(void*) override {}
  void before_replay() override {}
  void after_replay(void*) override {}
  void record_ready_times(bool) override {}
  int64_t capturable_from_step() const override { return 0; }
  std::vector<BucketTiming> bucket_timings() override { return {}; }
  std::string describe() const override { return ""; }

 private:
  StepEngine& engine_;
  const bool span_updates_;
  bool sync_ = false;
};

}  // namespace

std::unique_ptr<ReducerPort> make_reducer_port(std::unique_ptr<Reducer> reducer, size_t buffer_elems,
                                               CommWatchdog& watchdog, std::string description) {
  return std::make_unique<ReducerOverDdp>(std::move(reducer), buffer_elems, watchdog, std::move(description));
}

std::unique_ptr<ReducerPort> make_no_reducer_port(StepEngine& engine, bool span_updates) {
  return std::make_unique<NoReducer>(engine, span_updates);
}

}  // namespace ddpx
