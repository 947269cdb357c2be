// Reducer on one process (SelfCommunicator): launch order and timing of launches, no_sync steps, timing
// records, and the errors for misuse (span twice, out of order, unmarked tensors, calls out of sequence); with a
// watchdog over a fake communicator whose collectives hang until abort(), the timeout's error is what a stalled
// step ends in.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/error.hpp"
#include "ddp/comm_hook_factory.hpp"
#include "ddp/reducer.hpp"
#include "dist/self_communicator.hpp"
#include "dist/watchdog.hpp"
#include "error_expect.hpp"
#include "support/fake_communicator.hpp"
#include "toy_regression.hpp"

namespace ddpx {
namespace {

using testing::ToyRegression;

// Records the buckets it runs (on the reducer's communication thread) and multiplies them by 2, so a test can
// see both that and when a hook ran.
class RecordingHook : public CommHook {
 public:
  std::string name() const override { return "recording"; }
  void run(BucketView& bucket, Communicator&, void*, int64_t step) override {
    for (size_t i = 0; i < bucket.numel(); ++i) bucket.data[i] *= 2;
    std::lock_guard lock(mutex);
    runs.push_back({bucket.index, step});
  }
  // Remembers how many buckets had run when each step was finished.
  void finish_step(void* stream) override {
    EXPECT_EQ(stream, nullptr);  // host buckets
    std::lock_guard lock(mutex);
    runs_at_finish.push_back(runs.size());
  }
  std::vector<std::pair<size_t, int64_t>> snapshot() {
    std::lock_guard lock(mutex);
    return runs;
  }
  std::mutex mutex;
  std::vector<std::pair<size_t, int64_t>> runs;
  std::vector<size_t> runs_at_finish;
};

class ThrowingHook : public CommHook {
 public:
  std::string name() const override { return "throwing"; }
  void run(BucketView&, Communicator&, void*, int64_t) override { throw Error("wire on fire"); }
};

class FinishThrowingHook : public CommHook {
 public:
  std::string name() const override { return "finish-throwing"; }
  void run(BucketView&, Communicator&, void*, int64_t) override {}
  void finish_step(void*) override { throw Error("side stream on fire"); }
};

struct Fixture {
  ToyRegression model;
  SelfCommunicator comm;
  std::vector<float> grads = std::vector<float>(model.buffer_elems(), 1.0f);
  RecordingHook* hook = nullptr;

  // One bucket per group (weight + bias): group 4 is 208 bytes (the first cap), the largest group 1248 bytes,
  // and no two neighbouring groups fit in 1248 bytes together.
  std::unique_ptr<Reducer> make(bool overlap, AfterReduce after_reduce = {}) {
    auto recording = std::make_unique<RecordingHook>();
    hook = recording.get();
    BucketPlan plan(model.tensors(), BucketPlanOptions{1248, 208, 4});
    ReducerOptions options{overlap};
    options.after_reduce = std::move(after_reduce);
    return std::make_unique<Reducer>(comm, grads.data(), grads.size(), model.tensors(), std::move(plan),
                                     std::move(recording), options);
  }
  // Marks group spans as the toy model's backward would (group 4 .. 0).
  void mark_all(Reducer& reducer) {
    const auto& t = model.tensors();
    for (size_t i = 0; i < t.size(); i += 2) reducer.mark_ready(t[i].offset, t[i + 1].offset + t[i + 1].numel);
  }
};

template <typename Predicate>
bool eventually(Predicate predicate) {
  for (int i = 0; i < 500; ++i) {
    if (predicate()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return predicate();
}

using testing::error_of;

TEST(Reducer, OverlapLaunchesABucketBeforeTheStepEnds) {
  Fixture f;
  auto reducer = f.make(true);
  ASSERT_EQ(reducer->plan().size(), 5u);
  const auto& t = f.model.tensors();
  reducer->begin_step(true);
  reducer->mark_ready(t[0].offset, t[1].offset + t[1].numel);  // bucket 0 complete
  EXPECT_TRUE(eventually([&] { return f.hook->snapshot().size() == 1; }));
  for (size_t i = 2; i < t.size(); i += 2) reducer->mark_ready(t[i].offset, t[i + 1].offset + t[i + 1].numel);
  reducer->finish_step();
  EXPECT_EQ(f.hook->snapshot(), (std::vector<std::pair<size_t, int64_t>>{{0, 0}, {1, 0}, {2, 0}, {3, 0}, {4, 0}}));
  // Every bucket's span was processed exactly once (x2), padding included.
  for (float g : f.grads) EXPECT_EQ(g, 2.0f);
}

TEST(Reducer, WithoutOverlapEverythingWaitsForFinish) {
  Fixture f;
  auto reducer = f.make(false);
  reducer->begin_step(true);
  f.mark_all(*reducer);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(f.hook->snapshot().empty());
  reducer->finish_step();
  EXPECT_EQ(f.hook->snapshot().size(), 5u);
}

TEST(Reducer, NoSyncStepsCommunicateNothingAndDoNotCount) {
  Fixture f;
  auto reducer = f.make(true);
  for (int micro = 0; micro < 3; ++micro) {
    reducer->begin_step(micro == 2);
    f.mark_all(*reducer);
    reducer->finish_step();
  }
  EXPECT_EQ(f.hook->snapshot().size(), 5u);
  EXPECT_EQ(reducer->synchronized_steps(), 1);
  reducer->begin_step(true);
  f.mark_all(*reducer);
  reducer->finish_step();
  EXPECT_EQ(f.hook->snapshot().back(), (std::pair<size_t, int64_t>{4, 1}));  // the hook saw step index 1
}

// The overlapped optimizer's hook point: AfterReduce sees each bucket's span once its hook has left the average
// there (the values are already x2), in bucket order, before finish_step() returns; accumulation micro-batches
// reduce nothing and so call it never.
TEST(Reducer, AfterReduceSeesEachReducedBucketOnceBeforeTheStepEnds) {
  Fixture f;
  std::mutex mutex;
  std::vector<std::pair<size_t, size_t>> spans;
  std::vector<float> first_values;
  auto reducer = f.make(true, [&](size_t begin, size_t end, void* stream, const ReducedGradients*) {
    EXPECT_EQ(stream, nullptr);  // host buckets: called on the communication thread
    std::lock_guard lock(mutex);
    spans.emplace_back(begin, end);
    first_values.push_back(f.grads[begin]);
  });
  for (int micro = 0; micro < 2; ++micro) {
    reducer->begin_step(micro == 1);
    f.mark_all(*reducer);
    reducer->finish_step();
    if (micro == 0) EXPECT_TRUE(spans.empty());
  }
  std::vector<std::pair<size_t, size_t>> expected;
  for (size_t b = 0; b < reducer->plan().size(); ++b) expected.emplace_back(reducer->plan()[b].begin, reducer->plan()[b].end);
  EXPECT_EQ(spans, expected);
  for (float v : first_values) EXPECT_EQ(v, 2.0f);  // after the hook
}

TEST(Reducer, TimingRecordsPerBucket) {
  Fixture f;
  auto reducer = f.make(true);
  reducer->begin_step(true);
  f.mark_all(*reducer);
  reducer->finish_step();
  std::vector<BucketTiming> timings = reducer->bucket_timings();
  ASSERT_EQ(timings.size(), 5u);
  for (size_t b = 0; b < timings.size(); ++b) {
    EXPECT_EQ(timings[b].bucket, b);
    EXPECT_EQ(timings[b].elements, reducer->plan()[b].numel());
    EXPECT_EQ(timings[b].bytes, 4 * timings[b].elements);
    EXPECT_LE(timings[b].ready_ms, timings[b].start_ms);
    EXPECT_LE(timings[b].start_ms, timings[b].end_ms);
    if (b > 0) EXPECT_LE(timings[b - 1].end_ms, timings[b].start_ms);  // one communication thread, in order
  }
}

// A bucket's bytes are what its hook put on the wire (CommHook::wire_bytes), so bus bandwidth is not doubled for a
// 16-bit hook: the fp32 span for allreduce, half of it for bf16, PowerSGD's factors and vectors once it compresses.
TEST(Reducer, TimingBytesAreTheHooksWireBytes) {
  Fixture f;
  for (const char* spec : {"allreduce", "bf16", "fp16", "powersgd:1:1"}) {
    std::unique_ptr<CommHook> hook = make_comm_hook(spec);
    const CommHook& h = *hook;
    BucketPlan plan(f.model.tensors(), BucketPlanOptions{1248, 208, 4});
    Reducer reducer(f.comm, f.grads.data(), f.grads.size(), f.model.tensors(), std::move(plan), std::move(hook));
    for (int64_t step = 0; step < 2; ++step) {
      reducer.begin_step(true);
      f.mark_all(reducer);
      reducer.finish_step();
      for (const BucketTiming& t : reducer.bucket_timings()) {
        BucketView view{t.bucket, f.grads.data() + reducer.plan()[t.bucket].begin, reducer.plan()[t.bucket].begin,
                        reducer.plan()[t.bucket].end, {}, GradDevice::cpu};
        const std::string name = spec;
        if (name == "allreduce") EXPECT_EQ(t.bytes, 4 * t.elements);
        if (name == "bf16" || name == "fp16") EXPECT_EQ(t.bytes, 2 * t.elements);
        if (name.rfind("powersgd", 0) == 0 && step == 0) EXPECT_EQ(t.bytes, 4 * t.elements);  // before START
        if (name.rfind("powersgd", 0) == 0 && step == 1) {
          EXPECT_EQ(t.bytes, h.wire_bytes(view, 1));
          EXPECT_GT(t.bytes, 0u);
          EXPECT_LE(t.bytes, 4 * t.elements);
        }
      }
    }
  }
}

TEST(Reducer, SpanMarkedTwiceIsExplained) {
  Fixture f;
  auto reducer = f.make(true);
  const auto& t = f.model.tensors();
  reducer->begin_step(true);
  reducer->mark_ready(t[0].offset, t[1].offset + t[1].numel);
  std::string error = error_of([&] { reducer->mark_ready(t[1].offset, t[1].offset + t[1].numel); });
  EXPECT_NE(error.find("(tensor 'group4.bias') was marked ready twice in this step, or out of buffer order"),
            std::string::npos)
      << error;
}

TEST(Reducer, UnmarkedTensorsAreNamedAtFinish) {
  Fixture f;
  auto reducer = f.make(true);
  const auto& t = f.model.tensors();
  reducer->begin_step(true);
  reducer->mark_ready(t[0].offset, t[0].offset + t[0].numel);  // group4.weight only
  reducer->mark_ready(t[2].offset, t[3].offset + t[3].numel);  // skips group4.bias
  std::string error = error_of([&] { reducer->finish_step(); });
  EXPECT_NE(error.find("the step ended before every gradient was marked ready: 'group4.bias' (0 of 4 elements "
                       "marked), 'group2.weight' (0 of 96 elements marked), 'group2.bias' (0 of 8 elements "
                       "marked) and 4 more"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("find_unused_parameters"), std::string::npos);
  // The reducer is usable again after the failed step.
  reducer->begin_step(true);
  f.mark_all(*reducer);
  EXPECT_NO_THROW(reducer->finish_step());
}

TEST(Reducer, PartialSpansAccumulateToACompleteTensor) {
  Fixture f;
  auto reducer = f.make(true);
  reducer->begin_step(true);
  const size_t end = f.model.buffer_elems();
  for (size_t begin = 0; begin < end; begin += 7) reducer->mark_ready(begin, std::min(end, begin + 7));
  EXPECT_NO_THROW(reducer->finish_step());
  EXPECT_EQ(f.hook->snapshot().size(), 5u);
}

TEST(Reducer, CallsOutOfSequence) {
  Fixture f;
  auto reducer = f.make(true);
  EXPECT_NE(error_of([&] { reducer->mark_ready(0, 1); }).find("outside a step: call begin_step() first"),
            std::string::npos);
  EXPECT_NE(error_of([&] { reducer->finish_step(); }).find("without an open step"), std::string::npos);
  reducer->begin_step(false);
  EXPECT_NE(error_of([&] { reducer->begin_step(false); }).find("called again before finish_step()"),
            std::string::npos);
  EXPECT_NE(error_of([&] { reducer->mark_ready(5, f.model.buffer_elems() + 1); }).find("outside the gradient buffer"),
            std::string::npos);
}

// CommHook::finish_step: once per synchronized step, after every bucket of it ran; accumulation micro-batches
// run no bucket and finish no hook step.
TEST(Reducer, HookFinishStepFollowsEverySynchronizedStepsBuckets) {
  Fixture f;
  auto reducer = f.make(true);
  for (int micro = 0; micro < 4; ++micro) {
    reducer->begin_step(micro % 2 == 1);
    f.mark_all(*reducer);
    reducer->finish_step();
  }
  std::lock_guard lock(f.hook->mutex);
  EXPECT_EQ(f.hook->runs_at_finish, (std::vector<size_t>{5, 10}));
}

// The error that ends one synchronized step of the toy model (one bucket) whose hook is `hook`.
std::string error_of_one_step(std::unique_ptr<CommHook> hook) {
  ToyRegression model;
  SelfCommunicator comm;
  std::vector<float> grads(model.buffer_elems());
  BucketPlan plan(model.tensors(), BucketPlanOptions{});
  Reducer reducer(comm, grads.data(), grads.size(), model.tensors(), plan, std::move(hook));
  reducer.begin_step(true);
  const auto& t = model.tensors();
  reducer.mark_ready(0, t.back().offset + t.back().numel);
  return error_of([&] { reducer.finish_step(); });
}

TEST(Reducer, HookFinishStepFailureNamesTheHook) {
  EXPECT_EQ(error_of_one_step(std::make_unique<FinishThrowingHook>()),
            "communication hook 'finish-throwing' failed at the end of a step: side stream on fire");
}

TEST(Reducer, HookFailureNamesHookBucketAndStep) {
  EXPECT_EQ(error_of_one_step(std::make_unique<ThrowingHook>()),
            "communication hook 'throwing' failed in bucket 0 of step 0: wire on fire");
}

TEST(Reducer, RejectsMismatchedConstruction) {
  ToyRegression model;
  SelfCommunicator comm;
  std::vector<float> grads(model.buffer_elems());
  BucketPlan plan(model.tensors(), BucketPlanOptions{});
  std::vector<GradTensor> fewer(model.tensors().begin(), model.tensors().end() - 1);
  EXPECT_THROW(Reducer(comm, grads.data(), grads.size(), fewer, plan, make_comm_hook("allreduce")), Error);
  EXPECT_THROW(Reducer(comm, grads.data(), 10, model.tensors(), plan, make_comm_hook("allreduce")), Error);
  std::string error = error_of([&] {
    Reducer(comm, grads.data(), grads.size(), model.tensors(), plan, make_comm_hook("allreduce"),
            ReducerOptions{true, GradDevice::cuda});
  });
  EXPECT_NE(error.find("the gradients are in GPU memory but the 'self' backend communicates host buffers"),
            std::string::npos)
      << error;
}

// A host backend (rank 0 of 2) whose all-reduce hangs, as one waiting for a dead peer does, until abort() releases
// it (60 s at most, so a broken test cannot hang); then it fails, as NCCL's calls do after ncclCommAbort.
class HangingCommunicator : public testing::FakeCommunicator {
 public:
  HangingCommunicator() : FakeCommunicator({.size = 2, .backend = "hanging"}) {}
  void all_reduce(void*, size_t, CommDType, ReduceOp, void*) override {
    if (!wait_for_abort(std::chrono::seconds(60))) fail("hanging backend: all_reduce not aborted within 60 s");
    fail("hanging backend: all_reduce aborted");
  }
};

// A CPU reducer over the toy model's gradients (one bucket per group), watched by `watchdog`.
Reducer watched_cpu_reducer(Communicator& comm, CommWatchdog& watchdog, const ToyRegression& model,
                            std::vector<float>& grads) {
  return Reducer(comm, grads.data(), grads.size(), model.tensors(),
                 BucketPlan(model.tensors(), BucketPlanOptions{1248, 208, 4}), make_comm_hook("allreduce"),
                 ReducerOptions{true, GradDevice::cpu, nullptr, watchdog});
}

TEST(ReducerWatchdog, AStalledCollectiveIsAbortedAndReportedAsTheTimeout) {
  ToyRegression model;
  HangingCommunicator comm;
  CommWatchdog watchdog(comm, std::chrono::milliseconds(100));
  std::vector<float> grads(model.buffer_elems(), 1.0f);
  Reducer reducer = watched_cpu_reducer(comm, watchdog, model, grads);
  reducer.begin_step(true);
  const auto& t = model.tensors();
  for (size_t i = 0; i < t.size(); i += 2) reducer.mark_ready(t[i].offset, t[i + 1].offset + t[i + 1].numel);
  const std::string expected =
      "rank 0: communication timed out after 0.1 s in bucket 0 of step 0 (a peer rank probably died or stalled)";
  // The aborted all-reduce fails too, but the error is the watchdog's: the timeout is the cause.
  EXPECT_EQ(error_of([&] { reducer.finish_step(); }), expected);
  EXPECT_EQ(comm.aborts(), 1);
  EXPECT_EQ(error_of([&] { reducer.begin_step(true); }), expected);
}

// The watchdog times collectives in flight, not the backward pass around them: a long gap between two bucket
// launches (compute) with every launched bucket complete is no timeout. (The old clock ran from the first launch
// to finish_step and fired here.)
TEST(ReducerWatchdog, ComputeBetweenBucketsIsNotCommunication) {
  ToyRegression model;
  SelfCommunicator comm;
  CommWatchdog watchdog(comm, std::chrono::milliseconds(500));
  std::vector<float> grads(model.buffer_elems(), 1.0f);
  Reducer reducer = watched_cpu_reducer(comm, watchdog, model, grads);
  reducer.begin_step(true);
  const auto& t = model.tensors();
  reducer.mark_ready(t[0].offset, t[1].offset + t[1].numel);  // the first bucket launches at once
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // "compute": three timeouts long
  for (size_t i = 2; i < t.size(); i += 2) reducer.mark_ready(t[i].offset, t[i + 1].offset + t[i + 1].numel);
  EXPECT_EQ(error_of([&] { reducer.finish_step(); }), testing::kNoError);
  EXPECT_FALSE(watchdog.fired()) << watchdog.message();
}

TEST(ReducerWatchdog, GraphReplaysNeedGpuGradients) {
  Fixture f;
  auto reducer = f.make(true);
  EXPECT_NE(error_of([&] { reducer->before_replay(); }).find("CUDA graph replays need GPU gradients"),
            std::string::npos);
  EXPECT_NE(error_of([&] { reducer->after_replay(nullptr); }).find("CUDA graph replays need GPU gradients"),
            std::string::npos);
}

}  // namespace
}  // namespace ddpx
