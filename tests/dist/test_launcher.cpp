// launch_local_workers(), through the launch_driver program: environment, output prefixes, the first-failure
// report, and that the remaining workers are stopped (SIGTERM, then SIGKILL) instead of hanging the launch.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

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

TEST(Launcher, InterruptIsForwardedToEveryWorker) {
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  pid_t launcher = ::fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    ::close(out[0]);
    ::execl(DDPX_LAUNCH_DRIVER, DDPX_LAUNCH_DRIVER, "3", "sleep", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  // Wait until all three workers reported (they then sleep), then press "Ctrl-C" on the launcher.
  std::string output;
  char buffer[4096];
  ssize_t got;
  auto count = [&](const std::string& text) {
    size_t n = 0;
    for (size_t at = output.find(text); at != std::string::npos; at = output.find(text, at + 1)) ++n;
    return n;
  };
  while (count("got 'hello from rank 0'") < 3 && (got = ::read(out[0], buffer, sizeof buffer)) > 0)
    output.append(buffer, size_t(got));
  ASSERT_EQ(count("got 'hello from rank 0'"), 3u) << output;
  ::kill(launcher, SIGINT);
  while ((got = ::read(out[0], buffer, sizeof buffer)) > 0) output.append(buffer, size_t(got));
  ::close(out[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(launcher, &status, 0), launcher);
  ASSERT_TRUE(WIFEXITED(status)) << output;
  EXPECT_EQ(WEXITSTATUS(status), 130) << output;
  EXPECT_NE(output.find("ddpx launch: interrupted; all 3 workers stopped"), std::string::npos) << output;
}

TEST(Launcher, UnderMpirun) {
#ifndef DDPX_HAVE_MPI
  GTEST_SKIP() << "built without MPI";
#endif
  RunResult ok = run_driver("mpirun 2 ok");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("rank 1 of 2 via Open MPI"), std::string::npos) << ok.output;
  RunResult failing = run_driver("mpirun 2 fail");
  EXPECT_NE(failing.exit_code, 0) << failing.output;
  EXPECT_NE(failing.output.find("rank 1 failing on purpose"), std::string::npos) << failing.output;
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
