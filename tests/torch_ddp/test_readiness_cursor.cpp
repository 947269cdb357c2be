// torch_ddp's ReadinessCursor (src/torch_ddp/readiness_cursor.hpp) over a real Reducer on tests/support's fake
// communicator (2 ranks, rank 0): gradients that arrive out of buffer order reach the reducer in buffer order, each
// span once (the reducer throws on a span twice or out of order), every bucket is all-reduced once per step in
// buffer order, and a tensor that never becomes ready is what the step's error names. No LibTorch: the cursor is the
// adapter's bookkeeping between autograd's hooks and the reducer.
#include <gtest/gtest.h>

#include <mutex>
#include <vector>

#include "core/error.hpp"
#include "ddp/comm_hook_factory.hpp"
#include "ddp/reducer.hpp"
#include "support/fake_communicator.hpp"
#include "torch_ddp/readiness_cursor.hpp"

namespace ddpx::torch {
namespace {

// Records where each all-reduce's buffer starts (the reducer's communication thread calls it).
class RecordingCommunicator : public testing::FakeCommunicator {
 public:
  RecordingCommunicator() : FakeCommunicator(testing::FakeWorld{.rank = 0, .size = 2}) {}
  void all_reduce(void* data, size_t count, CommDType type, ReduceOp op, void* stream) override {
    FakeCommunicator::all_reduce(data, count, type, op, stream);
    std::lock_guard lock(mutex);
    starts.push_back(static_cast<float*>(data));
  }
  std::vector<float*> taken() {
    std::lock_guard lock(mutex);
    std::vector<float*> out;
    out.swap(starts);
    return out;
  }
  std::mutex mutex;
  std::vector<float*> starts;
};

// Four tensors with padding between them (offsets 0, 16, 32, 64); caps of 40 bytes give one bucket per tensor.
const std::vector<GradTensor> kTensors = {
    {"t0", 0, 10, {10}}, {"t1", 16, 6, {6}}, {"t2", 32, 20, {20}}, {"t3", 64, 4, {4}}};

struct Rig {
  RecordingCommunicator comm;
  std::vector<float> grads = std::vector<float>(68, 1.0f);
  Reducer reducer{comm, grads.data(), grads.size(), kTensors, BucketPlan(kTensors, BucketPlanOptions{40, 40, 4}),
                  make_comm_hook("allreduce"), ReducerOptions{/*overlap=*/true}};
  ReadinessCursor cursor{spans()};

  static std::vector<ReadinessCursor::Span> spans() {
    std::vector<ReadinessCursor::Span> out;
    for (const GradTensor& t : kTensors) out.push_back({t.offset, t.numel});
    return out;
  }
  std::vector<float*> bucket_starts() {
    return {grads.data(), grads.data() + 16, grads.data() + 32, grads.data() + 64};
  }
};

TEST(ReadinessCursor, OutOfOrderGradientsReachTheReducerInBufferOrder) {
  Rig rig;
  ASSERT_EQ(rig.reducer.plan().size(), 4u);
  rig.cursor.begin_pass();
  rig.reducer.begin_step(/*sync=*/true);
  // Autograd's order here: 1, 0, 3, 2 (a skip connection, say). The cursor waits for the tensors before.
  EXPECT_TRUE(rig.cursor.mark(1, rig.reducer));
  EXPECT_EQ(rig.cursor.cursor(), 0u);
  EXPECT_TRUE(rig.cursor.mark(0, rig.reducer));
  EXPECT_EQ(rig.cursor.cursor(), 2u);  // tensors 0 and 1 handed over as one span
  EXPECT_TRUE(rig.cursor.mark(3, rig.reducer));
  EXPECT_EQ(rig.cursor.cursor(), 2u);
  EXPECT_TRUE(rig.cursor.mark(2, rig.reducer));
  EXPECT_EQ(rig.cursor.cursor(), 4u);
  EXPECT_TRUE(rig.cursor.not_ready().empty());
  rig.reducer.finish_step();  // throws if a tensor was never handed over
  EXPECT_EQ(rig.comm.all_reduces.load(), 4);
  EXPECT_EQ(rig.comm.taken(), rig.bucket_starts());  // one all-reduce per bucket, in buffer order
  EXPECT_EQ(rig.reducer.synchronized_steps(), 1);
}

TEST(ReadinessCursor, ASecondMarkOfATensorIsRefusedAndHandsNothing) {
  Rig rig;
  rig.cursor.begin_pass();
  rig.reducer.begin_step(true);
  EXPECT_TRUE(rig.cursor.mark(0, rig.reducer));
  // The reducer would throw on the same span twice; the cursor says no and calls nothing.
  EXPECT_FALSE(rig.cursor.mark(0, rig.reducer));
  EXPECT_EQ(rig.cursor.cursor(), 1u);
  for (size_t i = 1; i < 4; ++i) EXPECT_TRUE(rig.cursor.mark(i, rig.reducer));
  rig.reducer.finish_step();
  EXPECT_EQ(rig.comm.all_reduces.load(), 4);
}

TEST(ReadinessCursor, TensorsSetReadyTogetherAdvanceAsOneRun) {
  Rig rig;
  rig.cursor.begin_pass();
  rig.reducer.begin_step(true);
  // find_unused_parameters: the unused tensors 0 and 1 are made ready before any gradient arrives.
  EXPECT_TRUE(rig.cursor.set_ready(0));
  EXPECT_TRUE(rig.cursor.set_ready(1));
  EXPECT_EQ(rig.cursor.cursor(), 0u);  // nothing handed over until advance()
  EXPECT_FALSE(rig.cursor.set_ready(1));
  rig.cursor.advance(rig.reducer);
  EXPECT_EQ(rig.cursor.cursor(), 2u);
  EXPECT_EQ(rig.cursor.not_ready(), (std::vector<size_t>{2, 3}));
  EXPECT_TRUE(rig.cursor.mark(3, rig.reducer));
  EXPECT_TRUE(rig.cursor.mark(2, rig.reducer));
  rig.reducer.finish_step();
  EXPECT_EQ(rig.comm.taken(), rig.bucket_starts());
}

TEST(ReadinessCursor, ATensorNeverReadyIsWhatTheStepEndsOn) {
  Rig rig;
  rig.cursor.begin_pass();
  rig.reducer.begin_step(true);
  for (size_t i : {0u, 1u, 3u}) EXPECT_TRUE(rig.cursor.mark(i, rig.reducer));
  EXPECT_EQ(rig.cursor.cursor(), 2u);  // tensor 3 is ready but waits behind tensor 2
  EXPECT_EQ(rig.cursor.not_ready(), std::vector<size_t>{2});
  try {
    rig.reducer.finish_step();
    FAIL() << "expected the reducer's error for the unmarked tensors";
  } catch (const Error& e) {
    // The reducer never saw tensor 3 either: a span may not skip the gap before it.
    const std::string message = e.what();
    EXPECT_NE(message.find("'t2' (0 of 20 elements marked)"), std::string::npos) << message;
    EXPECT_NE(message.find("'t3' (0 of 4 elements marked)"), std::string::npos) << message;
    EXPECT_EQ(message.find("'t1'"), std::string::npos) << message;
  }
  EXPECT_EQ(rig.comm.taken(), (std::vector<float*>{rig.grads.data(), rig.grads.data() + 16}));  // buckets 0 and 1
}

TEST(ReadinessCursor, EveryPassStartsOverAtTheFirstTensor) {
  Rig rig;
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE(step);
    rig.cursor.begin_pass();
    EXPECT_EQ(rig.cursor.cursor(), 0u);
    EXPECT_EQ(rig.cursor.not_ready().size(), 4u);
    rig.reducer.begin_step(true);
    for (size_t i : {3u, 2u, 1u, 0u}) EXPECT_TRUE(rig.cursor.mark(i, rig.reducer));
    EXPECT_EQ(rig.cursor.cursor(), 4u);
    rig.reducer.finish_step();
    EXPECT_EQ(rig.comm.taken(), rig.bucket_starts());
  }
  EXPECT_EQ(rig.reducer.synchronized_steps(), 3);
  EXPECT_EQ(rig.comm.all_reduces.load(), 12);
}

}  // namespace
}  // namespace ddpx::torch
