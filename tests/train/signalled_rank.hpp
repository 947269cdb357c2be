// A rank killed or stopped mid-run ends a two-rank job (the CPU form over Gloo in test_trainer_multirank_cpu.cpp, the
// NCCL form in test_multirank_cuda.cpp): killed, the launcher names it; stopped (alive, silent), a live rank's
// watchdog or the backend's own timeout (both --comm-timeout) fails that rank and the launcher ends the job. Every
// wait here is bounded; the job is killed if it outlives them, and the time from the signal to the job's end is
// checked against --comm-timeout.
#pragma once
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_runner.hpp"
#include "two_ranks.hpp"

namespace ddpx::testing {

// The pid of the child of `parent` whose environment has RANK=<rank>, or -1 (a scan of /proc).
inline pid_t child_with_rank(pid_t parent, int rank) {
  namespace fs = std::filesystem;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(text.substr(close + 2));
    std::string state;
    pid_t ppid = 0;
    fields >> state >> ppid;
    if (ppid != parent) continue;
    std::ifstream environ(entry.path() / "environ");
    std::string env((std::istreambuf_iterator<char>(environ)), std::istreambuf_iterator<char>());
    if (env.find(std::string("\0RANK=", 6) + std::to_string(rank) + '\0') != std::string::npos)
      return static_cast<pid_t>(std::stol(name));
  }
  return -1;
}

// Starts `ddpx train <run_flags> --nproc-per-node 2 --comm-timeout <timeout_s>` on learnable data, waits for rank 0's
// third step, sends `signal_number` to rank 1, and expects the job to end non-zero within timeout_s + 30 s with
// every text of `expected` in its output.
inline void expect_signalled_rank_ends_the_job(const std::string& run_flags, const std::string& tag, int timeout_s,
                                               int signal_number, const std::vector<std::string>& expected) {
  const std::filesystem::path output = scratch(tag + "_" + std::to_string(signal_number) + ".log");
  const std::string command = fmt::format(
      "exec env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u OMPI_COMM_WORLD_SIZE -u PMI_SIZE -u SLURM_NTASKS {} train "
      "{} --nproc-per-node 2 --steps 1000000 --warmup 0 --workers 1 --log-every 1 --comm-timeout {} "
      "--data learnable > {} 2>&1",
      DDPX_BINARY, run_flags, timeout_s, output.string());
  const pid_t launcher = ::fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  bool exited = false;
  auto wait_for = [&](auto done, int tenths) {
    for (int i = 0; i < tenths && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return done();
  };
  const bool training =
      wait_for([&] { return read_text(output).find("[rank 0] step      3") != std::string::npos; }, 1200);
  const pid_t rank1 = training ? child_with_rank(launcher, 1) : -1;
  const auto signalled = std::chrono::steady_clock::now();
  if (rank1 > 0) ::kill(rank1, signal_number);
  wait_for([&] { return exited = exited || ::waitpid(launcher, &status, WNOHANG) == launcher; },
           10 * (timeout_s + 30));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
  if (!exited) {
    ::kill(launcher, SIGKILL);
    ::waitpid(launcher, &status, 0);
  }
  if (rank1 > 0) ::kill(rank1, SIGKILL);  // a stopped rank the job left behind
  const std::string log = read_text(output);
  ASSERT_TRUE(training) << log;
  ASSERT_GT(rank1, 0) << "rank 1's process was not found\n" << log;
  EXPECT_TRUE(exited) << "the job did not end within " << timeout_s + 30 << " s after rank 1 got signal "
                      << signal_number << "\n" << log;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << log;
  for (const std::string& text : expected) EXPECT_NE(log.find(text), std::string::npos) << text << "\n" << log;
  std::printf("[ signalled ] rank 1 got signal %d; the job ended %.1f s later (--comm-timeout %d)\n", signal_number,
              seconds, timeout_s);
}

}  // namespace ddpx::testing
