// The trainer across CPU ranks (they run in CI; the GPU forms are test_trainer_cuda.cpp's): a failing rank ends the
// job with its own error (MPI, Gloo), a Gloo rank killed or stopped mid-run ends the job, and --nproc-per-node
// under another launcher. Two ranks equal one with the whole batch, on every model family, is
// test_family_properties.cpp's.
#include <gtest/gtest.h>

#include <fmt/format.h>

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

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::run_cli;
using testing::scratch;

#if defined(DDPX_HAVE_MPI) || defined(DDPX_HAVE_GLOO)
// Rank 0 fails between steps (its checkpoint cannot be written) while rank 1 already waits in the next step's
// all-reduce. The job must end at once with rank 0's own error, not hang in MPI_Finalize until rank 1's watchdog
// reports a communication timeout (60 s here; the test would then also fail on the message). Over Gloo, rank 1
// sees rank 0's connections close and fails at once; the launcher names rank 0 first. The folder passes the check
// before training; a folder squatting on the name of the step-3 checkpoint makes that save fail.
void expect_failing_rank_ends_the_job_with_its_own_error(const std::string& backend_flags) {
  const fs::path checkpoint_dir = scratch("checkpoint_blocked" + backend_flags.substr(backend_flags.find_last_of(' ') + 1));
  fs::remove_all(checkpoint_dir);
  fs::create_directories(checkpoint_dir / "checkpoint-3.safetensors" / "occupied");
  const CliResult r = run_cli(fmt::format(
      "train --device cpu --model vit_tiny_test --nproc-per-node 2 --batch 4 --steps 6 --workers 1 "
      "--checkpoint-dir {} --checkpoint-every 3 --keep-checkpoints 2 --comm-timeout 60{}",
      checkpoint_dir.string(), backend_flags));
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("saving checkpoint"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("communication timed out"), std::string::npos) << r.output;
  if (!backend_flags.empty()) EXPECT_NE(r.output.find("ddpx launch: rank 0 exited"), std::string::npos) << r.output;
}
#endif

#ifdef DDPX_HAVE_GLOO
TEST(CpuTraining, AFailingGlooRankEndsTheJobWithItsOwnError) {
  expect_failing_rank_ends_the_job_with_its_own_error(" --backend gloo");
}

// The pid of the child of `parent` whose environment has RANK=<rank>, or -1 (a scan of /proc).
pid_t child_with_rank(pid_t parent, int rank) {
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

// A rank killed or stopped mid-run ends a Gloo job: killed, the launcher names it; stopped (alive, silent), a live
// rank's watchdog or Gloo's own timeout (both --comm-timeout) fails that rank, its roll call names the stopped
// rank, and the launcher ends the job. Every
// wait here is bounded; the job is killed if it outlives them.
void expect_signalled_gloo_rank_ends_the_job(int signal_number, const std::vector<std::string>& expected) {
  const fs::path output = scratch("gloo_signal_" + std::to_string(signal_number) + ".log");
  const std::string command = fmt::format(
      "exec env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u OMPI_COMM_WORLD_SIZE -u PMI_SIZE -u SLURM_NTASKS {} train "
      "--device cpu --model vit_tiny_test --nproc-per-node 2 --backend gloo --batch 2 --steps 1000000 --warmup 0 "
      "--workers 1 --log-every 1 --comm-timeout 3 --data learnable > {} 2>&1",
      DDPX_BINARY, output.string());
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
      wait_for([&] { return testing::read_text(output).find("[rank 0] step      3") != std::string::npos; }, 600);
  pid_t rank1 = training ? child_with_rank(launcher, 1) : -1;
  if (rank1 > 0) ::kill(rank1, signal_number);
  wait_for([&] { return exited = exited || ::waitpid(launcher, &status, WNOHANG) == launcher; }, 600);
  if (!exited) {
    ::kill(launcher, SIGKILL);
    ::waitpid(launcher, &status, 0);
  }
  const std::string log = testing::read_text(output);
  ASSERT_TRUE(training) << log;
  ASSERT_GT(rank1, 0) << "rank 1's process was not found\n" << log;
  EXPECT_TRUE(exited) << "the job did not end within 60 s after rank 1 got signal " << signal_number << "\n" << log;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << log;
  for (const std::string& text : expected) EXPECT_NE(log.find(text), std::string::npos) << text << "\n" << log;
}

TEST(CpuTraining, AKilledGlooRankEndsTheJobAndIsNamed) {
  expect_signalled_gloo_rank_ends_the_job(SIGKILL, {"ddpx launch: rank 1 was killed by signal 9"});
}

TEST(CpuTraining, AStoppedGlooRankEndsTheJob) {
  // Rank 0's own watchdog message or Gloo's timeout, whichever comes first (both after 3 s), and the roll call
  // that names the stopped rank.
  expect_signalled_gloo_rank_ends_the_job(SIGSTOP, {"ddpx launch: rank 0 exited with status 2 first: ddpx: error: ",
                                                    "imed out", "3 s",
                                                    "ddpx: rank 0: roll call after the failed gloo all_reduce: "
                                                    "rank(s) 1 did not answer within 2 s"});
}
#endif

#ifdef DDPX_HAVE_MPI
TEST(CpuTraining, AFailingMpiRankEndsTheJobWithItsOwnError) { expect_failing_rank_ends_the_job_with_its_own_error(""); }

// A launcher's variables for a world of one (an sbatch script's single task) do not stop --nproc-per-node from
// starting its workers; a process that already is one rank of several refuses the flag instead of ignoring it.
TEST(CpuTraining, NprocPerNodeUnderAnotherLauncher) {
  const std::string args = "train --device cpu --model vit_tiny_test --nproc-per-node 2 --batch 4 --steps 2 --workers 1";
  const CliResult single_task = testing::run_ddpx(args, "SLURM_PROCID=0 SLURM_NTASKS=1");
  EXPECT_EQ(single_task.status, 0) << single_task.output;
  EXPECT_NE(single_task.output.find("batch 4 x 2 rank(s)"), std::string::npos) << single_task.output;
  // The workers re-run the same command line: --nproc-per-node from a --config file is not a second launch.
  const fs::path config = scratch("nproc.cfg");
  std::ofstream(config) << "nproc-per-node = 2\n";
  const CliResult from_config = testing::run_ddpx(
      "train --device cpu --model vit_tiny_test --batch 4 --steps 2 --workers 1 --config " + config.string());
  EXPECT_EQ(from_config.status, 0) << from_config.output;
  EXPECT_NE(from_config.output.find("batch 4 x 2 rank(s)"), std::string::npos) << from_config.output;
  const CliResult inside_job = testing::run_ddpx(args, "RANK=1 WORLD_SIZE=2");
  EXPECT_NE(inside_job.status, 0) << inside_job.output;
  EXPECT_NE(inside_job.output.find("--nproc-per-node 2: this process is already rank 1 of 2 started by torchrun"),
            std::string::npos)
      << inside_job.output;
}
#endif

}  // namespace
}  // namespace ddpx
