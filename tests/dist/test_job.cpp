// DistJob (dist/job.hpp) in a world of one, the case every test process is: the self communicator unless the
// job asked for its backend alone, data_parallel() as the one "reduce or not" answer, the watched verbs over it,
// and the run clock's arithmetic (offset 0 on rank 0; restart_run_clock moves the zero to now).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "dist/job.hpp"
#include "dist/watchdog.hpp"

namespace ddpx {
namespace {

using namespace std::chrono_literals;

TEST(DistJob, AloneItTalksThroughSelfAndIsNotDataParallel) {
  // mpi named but not asked for alone (train without --ddp, allreduce --device cpu on one rank): MPI never starts.
  const DistJob job({.backend = BackendChoice::named("mpi"), .device = Device::cpu, .comm_timeout = 7s});
  EXPECT_EQ(job.rank(), 0);
  EXPECT_EQ(job.world(), 1);
  EXPECT_EQ(job.local_world(), 1);
  EXPECT_TRUE(job.lead());
  EXPECT_FALSE(job.data_parallel());
  EXPECT_EQ(job.communicator().backend_name(), "self");
  EXPECT_EQ(job.communicator().size(), 1);
  EXPECT_EQ(job.launcher(), "none");
  EXPECT_TRUE(job.watchdog().bounded());
  EXPECT_EQ(job.watchdog().timeout(), 7s);
  EXPECT_EQ(job.comm_timeout(), 7s);
  EXPECT_EQ(job.clock_offset().offset_ms, 0.0);  // rank 0 is the clock
  EXPECT_EQ(job.clock_offset().uncertainty_ms, 0.0);
}

TEST(DistJob, ABackendAskedForAloneMakesTheJobDataParallel) {
  // train --ddp on one rank, or the adapter with a named backend: the backend asked for, and a reducer.
  const DistJob job({.backend = BackendChoice::named("self"), .backend_when_alone = true});
  EXPECT_EQ(job.world(), 1);
  EXPECT_TRUE(job.data_parallel());
  EXPECT_EQ(job.communicator().backend_name(), "self");
}

TEST(DistJob, WatchedVerbsWorkAlone) {
  DistJob job{DistJobOptions{}};
  job.agree({{"--model", "vit_tiny_test"}, {"--steps", "6"}});
  std::vector<float> values{1.5f, -2.0f};
  job.broadcast_from_rank0(values.data(), values.size() * sizeof(float), "the broadcast of rank 0's test values");
  EXPECT_EQ(values, (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(job.gather_strings("mine"), std::vector<std::string>{"mine"});
  int calls = 0;
  job.run_watched("a test collective", [&] { ++calls; });
  EXPECT_EQ(calls, 1);
  // A collective's own error comes through the watch unchanged (the watchdog did not fire).
  EXPECT_THROW(job.run_watched("a failing collective", [] { throw Error("backend error"); }), Error);
  EXPECT_FALSE(job.watchdog().fired());
}

TEST(DistJob, TheRunClockCountsFromRankZerosStart) {
  DistJob job{DistJobOptions{}};
  // Steady times keep their spacing on the run clock (rank 0: offset 0).
  EXPECT_DOUBLE_EQ(job.on_run_clock(1000.0 + 40.0) - job.on_run_clock(1000.0), 40.0);
  const double before = steady_clock_ms();
  job.restart_run_clock();
  EXPECT_LE(job.on_run_clock(before), 0.0);  // the zero is now at or after `before`
  EXPECT_GE(job.now_ms(), 0.0);
}

TEST(DistJob, ABackendThatIsNotBuiltIsNamedWhenAskedForAlone) {
  for (const BackendEntry& entry : communication_backends()) {
    if (entry.built()) continue;
    SCOPED_TRACE(std::string(entry.name));
    try {
      DistJob job({.backend = BackendChoice(entry), .backend_when_alone = true});
      FAIL() << "expected the registry's error";
    } catch (const Error& e) {
      // The registry's refusal (dist/backend_registry.hpp), naming the backend.
      const std::string message = e.what();
      EXPECT_NE(message.find(std::string(entry.name)), std::string::npos) << message;
      EXPECT_NE(message.find("is not available"), std::string::npos) << message;
    }
  }
}

}  // namespace
}  // namespace ddpx
