// train, allreduce and bench started by an MPI launcher (real mpirun, 2 ranks, no MASTER_* set): train and
// allreduce bring up MPI the same way (the NCCL path never asks for MASTER_ADDR), bench and tune (which start the
// ranks of every run themselves) refuse to run as one rank of a job, naming the launcher; --ranks-per-gpu is refused where it means nothing.
#include <gtest/gtest.h>

#include <string>

#include "cli_runner.hpp"

namespace ddpx {
namespace {

using testing::run_ddpx;

#ifdef DDPX_HAVE_MPI
// `mpirun -np 2 ddpx <args>`, through run_ddpx's clean environment (mpirun sets the ranks' variables itself).
testing::CliResult mpirun2(const std::string& args) {
  return run_ddpx(args, "-u MASTER_ADDR -u MASTER_PORT timeout -k 5 120 mpirun -np 2 --oversubscribe");
}

TEST(LaunchedByMpirun, TrainOnTheCpuRunsTwoMpiRanks) {
  const auto r = mpirun2("train --device cpu --model vit_tiny_test --data learnable --batch 4 --steps 3");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("DDP: mpi, 2 rank(s)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("summary: 3 steps"), std::string::npos) << r.output;
}

TEST(LaunchedByMpirun, TrainAndAllreduceOnCudaGoThroughMpiNotMasterVariables) {
  // Without a GPU both stop at the GPU choice; with one GPU, at the second rank's GPU (nothing binds one per
  // rank). Either way MPI came up first and no rank asks for MASTER_ADDR/MASTER_PORT.
  for (const char* args : {"train --device cuda --model vit_tiny_test --steps 1", "allreduce --device cuda --sizes 1K"}) {
    const auto r = mpirun2(args);
    EXPECT_NE(r.status, 0) << args << "\n" << r.output;
    EXPECT_EQ(r.output.find("MASTER_ADDR"), std::string::npos) << args << "\n" << r.output;
    const bool no_gpu = r.output.find("no CUDA GPU is visible") != std::string::npos ||
                        r.output.find("no GPU is visible") != std::string::npos;
    const bool shared_gpu = r.output.find("only 1 GPU is visible") != std::string::npos;
    EXPECT_TRUE(no_gpu || shared_gpu || r.status == 0) << args << "\n" << r.output;
  }
}

TEST(LaunchedByMpirun, AllreduceOnTheCpuRunsTwoMpiRanks) {
  const auto r = mpirun2("allreduce --device cpu --sizes 1K:4K --iters 2 --warmup 1");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("#  Rank  1 Group  0 Pid"), std::string::npos) << r.output;  // a device line per rank
  EXPECT_NE(r.output.find("# Out of bounds values : 0 OK"), std::string::npos) << r.output;
}

TEST(LaunchedByMpirun, BenchAndTuneRefuseToRunAsOneRankOfAJob) {
  for (const std::string command : {"bench --device cpu --gpus 1 --steps 2 --warmup 1 --out /tmp/ddpx_never_written",
                                    "tune --out /tmp/ddpx_never_written.cfg -- --device cpu --ddp"}) {
    const auto r = mpirun2(command);
    EXPECT_NE(r.status, 0) << r.output;
    const std::string name = command.substr(0, command.find(' '));
    EXPECT_NE(r.output.find("ddpx " + name + " runs as one process"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("started by Open MPI"), std::string::npos) << r.output;
  }
}
#endif

TEST(RanksPerGpu, RefusedOnTheCpuAndBelowOne) {
  for (const char* command : {"train --device cpu --steps 1", "allreduce --device cpu", "bench --device cpu --dry-run"}) {
    const auto r = run_ddpx(std::string(command) + " --ranks-per-gpu 2");
    EXPECT_EQ(r.status, 2) << command << "\n" << r.output;
    EXPECT_NE(r.output.find("--ranks-per-gpu 2 applies to --device cuda"), std::string::npos) << r.output;
  }
  const auto negative = run_ddpx("train --device cuda --ranks-per-gpu -1 --steps 1");
  EXPECT_NE(negative.status, 0) << negative.output;
}

TEST(RanksPerGpu, BenchPassesItToEveryTrainRun) {
  const auto r = run_ddpx("bench --device cuda --gpus 1,4 --ranks-per-gpu 2 --dry-run --models vit_tiny_test");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("--nproc-per-node 4 --ranks-per-gpu 2"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace ddpx
