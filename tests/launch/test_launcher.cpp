// launch_local_workers() and (on loopback) launch_node_workers(), through the launch_driver program: environment,
// output prefixes, the first-failure report, and that the remaining workers are stopped (SIGTERM, then SIGKILL)
// instead of hanging the launch.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "dist/free_ports.hpp"
#include "launch/launcher.hpp"
#include "launch/node_job.hpp"
#include "support/process_runner.hpp"

namespace ddpx {
namespace {

struct RunResult {
  int exit_code = -1;
  std::string output;
};

RunResult run_shell(const std::string& command) {
  testing::CommandResult result = testing::run_command(command);
  return {result.status, std::move(result.output)};
}

RunResult run_driver(const std::string& args) {
  return run_shell(std::string(DDPX_LAUNCH_DRIVER) + " " + args + " 2>&1");
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

// The launch_driver launcher started with `args`, its stdout and stderr on a pipe the test reads.
struct RunningDriver {
  pid_t pid = -1;
  int output_fd = -1;
  std::string output;

  explicit RunningDriver(const char* nproc, const char* mode) {
    int out[2];
    if (::pipe(out) != 0) return;
    pid = ::fork();
    if (pid == 0) {
      ::dup2(out[1], 1);
      ::dup2(out[1], 2);
      ::close(out[0]);
      ::execl(DDPX_LAUNCH_DRIVER, DDPX_LAUNCH_DRIVER, nproc, mode, static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(out[1]);
    output_fd = out[0];
  }
  ~RunningDriver() {
    if (output_fd >= 0) ::close(output_fd);
  }
  size_t count(const std::string& text) const {
    size_t n = 0;
    for (size_t at = output.find(text); at != std::string::npos; at = output.find(text, at + 1)) ++n;
    return n;
  }
  // Reads until `text` appeared `times` times or the output ends.
  void read_until(const std::string& text, size_t times) {
    char buffer[4096];
    ssize_t got;
    while (count(text) < times && (got = ::read(output_fd, buffer, sizeof buffer)) > 0)
      output.append(buffer, size_t(got));
  }
  void read_to_end() { read_until("\x01never", 1); }
  // The pids the workers printed ("... as pid N").
  std::vector<pid_t> worker_pids() const {
    std::vector<pid_t> pids;
    for (size_t at = output.find(" as pid "); at != std::string::npos; at = output.find(" as pid ", at + 1))
      pids.push_back(static_cast<pid_t>(std::stol(output.substr(at + 8))));
    return pids;
  }
};

// Alive and not a zombie (an orphan's zombie may wait for a reaper that never comes in a container).
bool process_running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z';
}

TEST(Launcher, InterruptIsForwardedToEveryWorker) {
  RunningDriver driver("3", "sleep");
  ASSERT_GT(driver.pid, 0);
  // Wait until all three workers reported (they then sleep), then press "Ctrl-C" on the launcher.
  driver.read_until("got 'hello from rank 0'", 3);
  ASSERT_EQ(driver.count("got 'hello from rank 0'"), 3u) << driver.output;
  ::kill(driver.pid, SIGINT);
  driver.read_to_end();
  int status = 0;
  ASSERT_EQ(::waitpid(driver.pid, &status, 0), driver.pid);
  ASSERT_TRUE(WIFEXITED(status)) << driver.output;
  EXPECT_EQ(WEXITSTATUS(status), 130) << driver.output;
  EXPECT_NE(driver.output.find("ddpx launch: interrupted; all 3 workers stopped"), std::string::npos)
      << driver.output;
}

TEST(Launcher, WorkersDieWithTheLauncher) {
  RunningDriver driver("2", "sleep");
  ASSERT_GT(driver.pid, 0);
  driver.read_until("got 'hello from rank 0'", 2);
  const std::vector<pid_t> workers = driver.worker_pids();
  ASSERT_EQ(workers.size(), 2u) << driver.output;
  for (pid_t worker : workers) ASSERT_TRUE(process_running(worker)) << worker;
  ::kill(driver.pid, SIGKILL);  // no chance to stop anyone: the kernel must
  int status = 0;
  ASSERT_EQ(::waitpid(driver.pid, &status, 0), driver.pid);
  for (pid_t worker : workers) {
    for (int i = 0; i < 500 && process_running(worker); ++i) ::usleep(20000);  // up to 10 s
    EXPECT_FALSE(process_running(worker)) << "worker " << worker << " outlived its launcher";
  }
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

// Two node launchers on one host (both on loopback; the runs across real hosts are multinode_launcher.sh): ranks
// are node * nproc + local, every rank gets rank 0's payload, and a failing rank on node 1 ends both nodes with
// the same verdict and exit status.
TEST(Launcher, TwoNodesOnLoopback) {
  // The node launcher listens on the port and the port after it (find_free_ports holds both while checking).
  // A port can still be taken between that check and the listen by another process on this host; node 0 then
  // says so ("is in use"), and the pair is drawn again, at most three times.
  const std::string node = std::string(DDPX_LAUNCH_DRIVER) + " nodes 2 ";
  auto both = [&](const std::string& mode) {
    RunResult run;
    for (int attempt = 0; attempt < 3; ++attempt) {
      const std::string tail = " 127.0.0.1 " + std::to_string(find_free_ports("127.0.0.1", 2)) + " 2 20 10 " + mode;
      run = run_shell("(timeout 60 " + node + "0" + tail + " & timeout 60 " + node + "1" + tail +
                      "; echo node1=$?; wait $!; echo node0=$?) 2>&1");
      if (run.output.find(") is in use") == std::string::npos) break;
    }
    return run;
  };
  RunResult ok = both("ok");
  for (int rank = 0; rank < 4; ++rank)
    EXPECT_NE(ok.output.find("rank " + std::to_string(rank) + " of 4 (local " + std::to_string(rank % 2) +
                             ") got 'hello from rank 0' as pid "),
              std::string::npos)
        << ok.output;
  EXPECT_NE(ok.output.find("node0=0"), std::string::npos) << ok.output;
  EXPECT_NE(ok.output.find("node1=0"), std::string::npos) << ok.output;

  RunResult failing = both("fail:3");
  const std::string verdict =
      "ddpx launch: rank 3 on node 1 (127.0.0.1) exited with status 3 first: rank 3 failing on purpose";
  const size_t first = failing.output.find(verdict);
  ASSERT_NE(first, std::string::npos) << failing.output;
  EXPECT_NE(failing.output.find(verdict, first + 1), std::string::npos) << "only one node reported it\n"
                                                                          << failing.output;
  EXPECT_NE(failing.output.find("node0=3"), std::string::npos) << failing.output;
  EXPECT_NE(failing.output.find("node1=3"), std::string::npos) << failing.output;
}

TEST(Launcher, RejectsBadArguments) {
  EXPECT_THROW(launch_local_workers(0, {"x"}), std::exception);
  EXPECT_THROW(launch_local_workers(2, {}), std::exception);
}

}  // namespace
}  // namespace ddpx

namespace ddpx {
namespace {

// issue 48: a loopback multi-node job without DDPX_JOB_TOKEN accepted any local process as a node without a word.
TEST(NodeJobSecret, LoopbackWithoutATokenRunsAndSaysAnyLocalProcessCouldJoin) {
  const char* saved = std::getenv("DDPX_JOB_TOKEN");
  const std::string kept = saved ? saved : "";
  ::unsetenv("DDPX_JOB_TOKEN");
  ::testing::internal::CaptureStderr();
  const std::string secret = node_job::shared_secret("127.0.0.1");
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(secret, "");
  EXPECT_NE(said.find("without DDPX_JOB_TOKEN"), std::string::npos) << said;
  EXPECT_NE(said.find("any process on this host"), std::string::npos) << said;
  ::setenv("DDPX_JOB_TOKEN", "s3cret", 1);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(node_job::shared_secret("127.0.0.1"), "s3cret");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  if (saved) ::setenv("DDPX_JOB_TOKEN", kept.c_str(), 1); else ::unsetenv("DDPX_JOB_TOKEN");
}

}  // namespace
}  // namespace ddpx
