// main() for GoogleTest programs that run as several Gloo ranks on loopback: `test_dist_gloo N` starts N copies of
// itself through ddpx's local launcher (launch_local_workers: RANK, WORLD_SIZE, MASTER_ADDR/PORT, DDPX_JOB_TOKEN)
// and returns the job's status; each copy runs the tests. Rank 0 prints the usual report; other ranks print only
// their failed assertions. A failing rank exits non-zero, the launcher stops the others and fails the ctest.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "dist/bootstrap.hpp"
#include "launch/launcher.hpp"

namespace {

class FailureOnlyPrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailureOnlyPrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "%s:%d: failure\n%s\n", result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.summary());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  if (!ddpx::launched_as_worker()) {
    if (argc < 2) {
      std::fprintf(stderr, "usage: %s NPROC [gtest flags]\n", argv[0]);
      return 2;
    }
    std::vector<std::string> worker_argv{argv[0]};
    for (int i = 2; i < argc; ++i) worker_argv.push_back(argv[i]);
    ddpx::LaunchOptions options;
    options.grace_period = std::chrono::seconds(2);
    return ddpx::launch_local_workers(std::atoi(argv[1]), worker_argv, options);
  }
  ::testing::InitGoogleTest(&argc, argv);
  const int rank = ddpx::detect_world().rank;
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailureOnlyPrinter(rank));
  }
  return RUN_ALL_TESTS();
}
