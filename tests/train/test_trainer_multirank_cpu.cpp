// The trainer across CPU ranks (they run in CI; the GPU forms are test_trainer_cuda.cpp's): a failing rank ends the
// job with its own error (MPI, Gloo), mid-run and between the job's opening and the run's plan; a Gloo rank killed
// or stopped mid-run ends the job; and --nproc-per-node under another launcher. Two ranks equal one with the whole
// batch, on every model family, is test_family_properties.cpp's.
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
#include "signalled_rank.hpp"
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

#if defined(DDPX_HAVE_MPI) || defined(DDPX_HAVE_GLOO)
// Note [The job opens before the plan] (train/trainer.cpp): a plan counted in epochs is made once the job has
// opened (its world sizes an epoch). A user error there, the same on every rank (at 2 ranks, an epoch of Fashion-
// MNIST's test split in batches of 2500 is 2 micro-batches per rank, less than one --grad-accum 3 step; at 1 rank it
// would be 4), ends the job with its message and status 2; so does an error on one rank only (the test fault point
// "plan" on rank 1) while rank 0 goes on into the start-up agreement: the launcher stops rank 0. Neither waits for a
// collective: that wait would end only at the watchdog's --comm-timeout (600 s here, past the test's timeout), and
// its message is absent. (Plan errors that need no world come before the job: test_run_plan.cpp's
// RunPlanCli.PlanErrorsThatNeedNoWorldComeBeforeTheJobOpens.)
// backend: "gloo" (ddpx's launcher starts the ranks) or "mpi" (mpirun does).
void expect_error_after_the_job_opens_ends_the_job(const std::string& backend) {
  const std::string job = "train --device cpu --nproc-per-node 2 --workers 1 --comm-timeout 600 --backend " + backend;
  const std::string common = job + " --model vit_tiny_test --batch 4";
  const char* const fashion = "/usr/share/datasets/fashion-mnist";
  if (fs::exists(fs::path(fashion) / "t10k-images-idx3-ubyte.gz")) {
    const CliResult plan_error = run_cli(fmt::format(
        "{} --model mlp:image=28,channels=1,layers=1,width=16,classes=10 --data idx:{}:test --batch 2500 --epochs 1 "
        "--grad-accum 3", job, fashion));
    EXPECT_EQ(plan_error.status, 2) << plan_error.output;
    EXPECT_NE(plan_error.output.find(
                  "ddpx: error: --epochs 1: 2 micro-batch(es) per rank do not make one step of --grad-accum 3"),
              std::string::npos)
        << plan_error.output;
    EXPECT_EQ(plan_error.output.find("communication timed out"), std::string::npos) << plan_error.output;
    EXPECT_EQ(plan_error.output.find("ddpx train: preparing"), std::string::npos) << plan_error.output;
  }

  const CliResult one_rank = testing::run_ddpx(common + " --steps 2", "DDPX_TEST_FAULT=plan:1:throw");
  EXPECT_NE(one_rank.status, 0) << one_rank.output;
  EXPECT_NE(one_rank.output.find("ddpx: error: rank 1: injected fault at plan (DDPX_TEST_FAULT)"), std::string::npos)
      << one_rank.output;
  EXPECT_EQ(one_rank.output.find("communication timed out"), std::string::npos) << one_rank.output;
  EXPECT_EQ(one_rank.output.find("summary:"), std::string::npos) << one_rank.output;  // rank 0 trained nothing
  if (backend == "gloo")
    EXPECT_NE(one_rank.output.find("ddpx launch: rank 1 exited with status 2 first"), std::string::npos)
        << one_rank.output;
}
#endif

#ifdef DDPX_HAVE_GLOO
TEST(CpuTraining, AnErrorAfterTheJobOpensEndsTheGlooJobWithItsMessage) {
  expect_error_after_the_job_opens_ends_the_job("gloo");
}

TEST(CpuTraining, AFailingGlooRankEndsTheJobWithItsOwnError) {
  expect_failing_rank_ends_the_job_with_its_own_error(" --backend gloo");
}

// A Gloo rank killed or stopped mid-run ends the job (signalled_rank.hpp; the NCCL form is
// test_multirank_cuda.cpp's).
void expect_signalled_gloo_rank_ends_the_job(int signal_number, const std::vector<std::string>& expected) {
  testing::expect_signalled_rank_ends_the_job("--device cpu --model vit_tiny_test --backend gloo --batch 2",
                                              "gloo_signal", 3, signal_number, expected);
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
TEST(CpuTraining, AnErrorAfterTheJobOpensEndsTheMpiJobWithItsMessage) {
  expect_error_after_the_job_opens_ends_the_job("mpi");
}

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
