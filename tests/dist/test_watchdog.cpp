// CommWatchdog with a fake communicator: fires with the documented message and aborts the communicator when a
// step's communication does not complete in time; stays quiet when it completes.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include <filesystem>
#include <unistd.h>

#include "core/error.hpp"
#include "dist/heartbeat.hpp"
#include "dist/watchdog.hpp"
#include "support/fake_communicator.hpp"

namespace ddpx {
namespace {

using namespace std::chrono_literals;

// Rank 2 of 4, recording the watchdog's abort.
class RecordingCommunicator : public testing::FakeCommunicator {
 public:
  RecordingCommunicator() : FakeCommunicator({.rank = 2, .size = 4, .local_rank = 2, .backend = "recording"}) {}
};

TEST(CommWatchdog, FiresAndAbortsWhenAStepHangs) {
  RecordingCommunicator comm;
  CommWatchdog watchdog(comm, 100ms);
  watchdog.arm(17, [] { return CommProgress{false, 3}; });
  for (int i = 0; i < 200 && !comm.aborted(); ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(comm.aborted());
  const std::string expected =
      "rank 2: communication timed out after 0.1 s in bucket 3 of step 17 (a peer rank probably died or stalled)";
  EXPECT_EQ(watchdog.message(), expected);
  EXPECT_EQ(comm.abort_reason(), expected);
  try {
    watchdog.throw_if_fired();
    FAIL() << "expected the watchdog's error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), expected);
  }
}

TEST(CommWatchdog, NamesOnlyTheStepWhenTheBucketIsUnknown) {
  RecordingCommunicator comm;
  CommWatchdog watchdog(comm, 100ms);
  watchdog.arm(5, [] { return CommProgress{false, -1}; });  // a replayed CUDA graph: no bucket to name
  for (int i = 0; i < 200 && !comm.aborted(); ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(comm.aborted());
  EXPECT_EQ(watchdog.message(),
            "rank 2: communication timed out after 0.1 s in step 5 (a peer rank probably died or stalled)");
}

TEST(CommWatchdog, QuietWhenCommunicationCompletes) {
  RecordingCommunicator comm;
  CommWatchdog watchdog(comm, 100ms);
  // Communication that has completed is never a timeout, however late the watchdog looks.
  watchdog.arm(1, [] { return CommProgress{true, 0}; });
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(watchdog.fired());
  // After disarm() the probe is never called again (so a pending step cannot fire), whatever the timing.
  std::atomic<int> probes{0};
  watchdog.arm(2, [&] {
    ++probes;
    return CommProgress{false, 0};
  });
  watchdog.disarm();
  const int probes_at_disarm = probes.load();
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(probes.load(), probes_at_disarm);
  EXPECT_NO_THROW(watchdog.throw_if_fired());
}

TEST(CommWatchdog, RunWatchedReturnsQuietlyWhenTheCollectiveCompletes) {
  RecordingCommunicator comm;
  CommWatchdog watchdog(comm, 100ms);
  int calls = 0;
  watchdog.run_watched("the start-up agreement", [&] { ++calls; });
  std::this_thread::sleep_for(300ms);  // well past the timeout: a completed collective never fires
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(watchdog.fired());
  // A collective that fails on its own reports its own error.
  EXPECT_THROW(watchdog.run_watched("the broadcast", [] { throw Error("backend error"); }), Error);
  EXPECT_FALSE(watchdog.fired());
}

// The watchdog of a holder given no timeout (a Reducer without one): it watches nothing, so it never probes, never
// aborts and never throws, and the collectives it "watches" simply run.
TEST(CommWatchdog, TheUnboundedOneRunsWhatItWatchesAndNeverFires) {
  CommWatchdog& watchdog = CommWatchdog::unbounded();
  EXPECT_EQ(&watchdog, &CommWatchdog::unbounded());  // one per process
  EXPECT_FALSE(watchdog.bounded());
  RecordingCommunicator comm;
  watchdog.attach(comm);  // shared by every holder: it keeps no communicator
  std::atomic<int> probes{0};
  watchdog.arm(3, [&] {
    ++probes;
    return CommProgress{false, 0};
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(probes.load(), 0);  // no thread: nothing ever polls
  watchdog.disarm();
  int calls = 0;
  watchdog.run_watched("a collective", [&] { ++calls; });
  EXPECT_EQ(calls, 1);
  EXPECT_THROW(watchdog.run_watched("a failing collective", [] { throw Error("backend error"); }), Error);
  EXPECT_FALSE(watchdog.fired());
  EXPECT_NO_THROW(watchdog.throw_if_fired());
  EXPECT_FALSE(comm.aborted());
}

TEST(CommWatchdog, RunWatchedReportsTheTimeoutInsteadOfTheAbortedCollectivesError) {
  RecordingCommunicator comm;
  CommWatchdog watchdog(comm, 100ms);
  try {
    watchdog.run_watched("the start-up agreement", [&] {
      for (int i = 0; i < 500 && !comm.aborted(); ++i) std::this_thread::sleep_for(10ms);  // blocks until aborted
      throw Error("mpi backend: MPI_Allgather failed");
    });
    FAIL() << "expected the watchdog's error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "rank 2: communication timed out after 0.1 s in the start-up agreement (a peer "
                                     "rank probably died or stalled)");
  }
  EXPECT_TRUE(comm.aborted());
}

TEST(CommWatchdog, NamesTheLaggingRankFromTheHeartbeatBoard) {
  const auto dir = std::filesystem::temp_directory_path() / ("ddpx_test_watchdog_board_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  RecordingCommunicator comm;  // rank 2 of 4
  HeartbeatBoard mine(dir, 2, 4), lagging(dir, 3, 4);
  CommWatchdog watchdog(comm, 100ms, &mine);
  watchdog.arm(7, [] { return CommProgress{false, 1}; });
  for (int i = 0; i < 200 && !comm.aborted(); ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(comm.aborted());
  // The state letter is the main thread's (/proc/PID/stat): sleeping in this loop or running.
  std::string message = watchdog.message();
  const size_t state = message.find("(state ");
  ASSERT_NE(state, std::string::npos) << message;
  message[state + 7] = '?';
  EXPECT_EQ(message,
            "rank 2: communication timed out after 0.1 s in bucket 1 of step 7 (collective #1): rank 3 has not "
            "reached it: process " + std::to_string(::getpid()) + " is busy outside any collective (state ?), "
            "before its first collective; no heartbeat from rank(s) 0, 1 on this node (not started yet, or on "
            "another node)");
  std::filesystem::remove_all(dir);
}

TEST(CommWatchdogDeathTest, BeforeTheCommunicatorExistsAFiringWatchdogEndsTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        CommWatchdog watchdog(1, 100ms);
        watchdog.run_watched("communicator creation (mpi)", [] { std::this_thread::sleep_for(10s); });
      },
      ::testing::ExitedWithCode(3),
      "ddpx: error: rank 1: communication timed out after 0.1 s in communicator creation \\(mpi\\)");
}

}  // namespace
}  // namespace ddpx
