// The multi-node launch flags of `ddpx train` and `ddpx allreduce` as a user meets them without a second host:
// torchrun's underscore spellings parse, and every refusal that needs no network (node flags without --nnodes, a
// node rank out of range, an address that does not resolve, --nnodes inside torchrun's or mpirun's world, the MPI
// CPU backend with --nnodes) is exit status 2 with a message naming the flag or variable. The runs across hosts
// are tests/dist/multinode_launcher.sh and tests/train/multinode_{mpirun,gloo}.sh.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "cli_runner.hpp"

namespace ddpx {
namespace {

using testing::CliResult;
using testing::run_ddpx;

void expect_refused(const std::string& args, const std::string& message, const std::string& env = "") {
  const CliResult result = run_ddpx(args, env);
  EXPECT_EQ(result.status, 2) << args << "\n" << result.output;
  EXPECT_NE(result.output.find(message), std::string::npos) << args << "\n" << result.output;
}

const std::string kTrain = "train --device cpu --model vit_tiny_test --steps 1 --quiet ";

TEST(LaunchFlags, NodeFlagsNeedNnodes) {
  expect_refused(kTrain + "--node-rank 1", "--node-rank applies only to a multi-node job");
  expect_refused(kTrain + "--master-addr 127.0.0.1", "--master-addr applies only to a multi-node job");
  expect_refused(kTrain + "--master_port 29999", "--master-port applies only to a multi-node job");
  expect_refused(kTrain + "--join-timeout 5", "--join-timeout applies only to a multi-node job");
}

TEST(LaunchFlags, BadNodeValuesNameTheFlag) {
  expect_refused(kTrain + "--backend gloo --nnodes 2 --node-rank 2 --master-addr 127.0.0.1",
                 "--node-rank 2 is out of range for --nnodes 2: give each node a rank in 0..1");
  // torchrun's underscore spellings mean the same flags
  expect_refused(kTrain + "--backend gloo --nnodes 3 --node_rank 7 --master_addr 127.0.0.1 --nproc_per_node 2",
                 "--node-rank 7 is out of range for --nnodes 3");
  expect_refused(kTrain + "--backend gloo --nnodes 2 --master-addr no-such-host.invalid",
                 "--master-addr no-such-host.invalid does not resolve");
  expect_refused(kTrain + "--backend gloo --nnodes 2", "--nnodes 2: give --master-addr");
  expect_refused(kTrain + "--backend gloo --nnodes 2 --master-addr 127.0.0.1 --master-port 65535",
                 "--master-port 65535 is not usable");
  expect_refused(kTrain + "--backend gloo --nnodes 0 --master-addr 127.0.0.1", "--nnodes");
  expect_refused(kTrain + "--backend gloo --nnodes 2 --master-addr 127.0.0.1 --join-timeout 0", "--join-timeout 0");
}

TEST(LaunchFlags, MpiAcrossNodesIsMpirunsJob) {
  expect_refused(kTrain + "--backend mpi --nnodes 2 --master-addr 127.0.0.1",
                 "--nnodes 2 with --device cpu --backend mpi: MPI spans nodes only under mpirun");
  expect_refused("allreduce --device cpu --nnodes 2 --master-addr 127.0.0.1",
                 "--nnodes 2 with --device cpu: ddpx allreduce measures CPUs over MPI");
}

TEST(LaunchFlags, NnodesInsideAnotherLaunchersWorldIsRefusedNamingBoth) {
  expect_refused(kTrain + "--backend gloo --nnodes 2 --master-addr 127.0.0.1",
                 "--nnodes 2: this process is already rank 1 of 2 started by torchrun",
                 "RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29999");
  expect_refused(kTrain + "--backend gloo --nnodes 2 --master-addr 127.0.0.1",
                 "this process was started by an MPI launcher (OMPI_COMM_WORLD_SIZE is set)",
                 "OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=1");
}

// ddpx tune and bench start the ranks of every run themselves: inside another launcher's job they refuse, naming
// the rank and the launcher (dist/bootstrap.hpp's launched_rank()); a launcher's world of one is one process.
TEST(LaunchFlags, TuneAndBenchInsideAJobAreRefusedNamingTheRank) {
  expect_refused("tune --out tune_inside_a_job.cfg",
                 "ddpx tune runs as one process and starts the ranks of every run itself, but this process is rank 1 "
                 "of 2 started by torchrun", "RANK=1 WORLD_SIZE=2");
  expect_refused("tune --out tune_inside_a_job.cfg", "this process is rank 2 of 4 started by Slurm",
                 "SLURM_PROCID=2 SLURM_NTASKS=4 SLURM_LOCALID=0 SLURM_STEP_ID=0");
  expect_refused("bench --device cpu --models vit_tiny_test",
                 "ddpx bench runs as one process and starts the ranks of every run itself, but this process is rank "
                 "3 of 4 started by Open MPI", "OMPI_COMM_WORLD_RANK=3 OMPI_COMM_WORLD_SIZE=4");
  const CliResult alone = run_ddpx("tune --trials-steps 1 --out tune_inside_a_job.cfg", "SLURM_PROCID=0 SLURM_NTASKS=1");
  EXPECT_EQ(alone.status, 2) << alone.output;
  EXPECT_NE(alone.output.find("--trials-steps 1: at least 2 steps per trial"), std::string::npos) << alone.output;
}

#ifdef DDPX_MPIEXEC
// The real mpirun: every rank refuses, so the job ends with the message instead of 2 x N workers.
TEST(LaunchFlags, NnodesUnderMpirunIsRefused) {
  const std::string command = std::string(DDPX_MPIEXEC) + " -np 2 --oversubscribe --allow-run-as-root " +
                              DDPX_BINARY + " " + kTrain + "--nnodes 2 --master-addr 127.0.0.1 2>&1";
  FILE* pipe = ::popen(("timeout 60 " + command).c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe)) output += buffer;
  const int status = ::pclose(pipe);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 124) << output;
  EXPECT_NE(output.find("--nnodes 2: this process was started by an MPI launcher (OMPI_COMM_WORLD_SIZE is set)"),
            std::string::npos)
      << output;
}
#endif

}  // namespace
}  // namespace ddpx
