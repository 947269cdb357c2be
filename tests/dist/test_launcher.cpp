// launch_local_workers(), through the launch_driver program: environment, output prefixes, the first-failure
// report, and that the remaining workers are stopped (SIGTERM, then SIGKILL) instead of hanging the launch.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "dist/launcher.hpp"

namespace ddpx {
namespace {

struct RunResult {
  int exit_code = -1;
  std::string output;
};

RunResult run_driver(const std::string& args) {
  std::string command = std::string(DDPX_LAUNCH_DRIVER) + " " + args + " 2>&1";
  RunResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return result;
  char buffer[4096];
  size_t got;
  while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, got);
  int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

TEST(Launcher, WorkersGetRanksAndPrefixedOutput) {
  RunResult run = run_driver("3 ok");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  for (int rank = 0; rank < 3; ++rank)
    EXPECT_NE(run.output.find("[rank " + std::to_string(rank) + "] rank " + std::to_string(rank) +
                              " of 3 (local " + std::to_string(rank) + ") got 'hello from rank 0'"),
              std::string::npos)
        << run.output;
}

TEST(Launcher, FirstFailureIsReportedWithItsLastStderrLine) {
  RunResult run = run_driver("3 fail");
  EXPECT_EQ(run.exit_code, 3) << run.output;
  EXPECT_NE(run.output.find("[rank 1] rank 1 failing on purpose"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("ddpx launch: rank 1 exited with status 3 first: rank 1 failing on purpose"),
            std::string::npos)
      << run.output;
}

TEST(Launcher, WorkerKilledBySignal) {
  RunResult run = run_driver("2 signal");
  EXPECT_EQ(run.exit_code, 128 + 9) << run.output;
  EXPECT_NE(run.output.find("ddpx launch: rank 1 was killed by signal 9"), std::string::npos) << run.output;
}

TEST(Launcher, WorkersIgnoringSigtermAreKilledAfterTheGracePeriod) {
  RunResult run = run_driver("3 stubborn");
  EXPECT_EQ(run.exit_code, 4) << run.output;
  EXPECT_NE(run.output.find("ddpx launch: rank 1 exited with status 4 first"), std::string::npos) << run.output;
}

TEST(Launcher, RejectsBadArguments) {
  EXPECT_THROW(launch_local_workers(0, {"x"}), std::exception);
  EXPECT_THROW(launch_local_workers(2, {}), std::exception);
}

TEST(Launcher, FindsAFreeLoopbackPort) {
  int port = find_free_port();
  EXPECT_GT(port, 0);
  EXPECT_LT(port, 65536);
}

}  // namespace
}  // namespace ddpx
