// detect_world(): precedence of launchers, defaults, the job token, and errors that name the variable.
#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "core/error.hpp"
#include "dist/bootstrap.hpp"
#include "fake_env.hpp"

namespace ddpx {
namespace {

using testing::fake_env;

TEST(Bootstrap, EveryLauncherKindHasItsDisplayName) {
  EXPECT_STREQ(launcher_name(LauncherKind::none), "none");
  EXPECT_STREQ(launcher_name(LauncherKind::torchrun), "torchrun");
  EXPECT_STREQ(launcher_name(LauncherKind::open_mpi), "Open MPI");
  EXPECT_STREQ(launcher_name(LauncherKind::pmi), "PMI");
  EXPECT_STREQ(launcher_name(LauncherKind::slurm), "Slurm");
}

TEST(Bootstrap, NoLauncherIsOneProcess) {
  WorldInfo world = detect_world(fake_env({}));
  EXPECT_EQ(world.rank, 0);
  EXPECT_EQ(world.world_size, 1);
  EXPECT_EQ(world.launcher, LauncherKind::none);
  EXPECT_FALSE(launched_as_worker(fake_env({})));
}

TEST(Bootstrap, EachLauncher) {
  WorldInfo ompi = detect_world(fake_env(
      {{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}}));
  EXPECT_EQ(ompi.launcher, LauncherKind::open_mpi);
  EXPECT_EQ(ompi.rank, 3);
  EXPECT_EQ(ompi.world_size, 4);
  EXPECT_EQ(ompi.local_rank, 1);
  WorldInfo pmi = detect_world(fake_env({{"PMI_RANK", "2"}, {"PMI_SIZE", "5"}}));
  EXPECT_EQ(pmi.launcher, LauncherKind::pmi);
  EXPECT_EQ(pmi.rank, 2);
  EXPECT_EQ(pmi.world_size, 5);
  EXPECT_EQ(pmi.local_rank, 0);
  WorldInfo slurm = detect_world(fake_env({{"SLURM_PROCID", "7"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "3"},
                                            {"SLURM_STEP_ID", "0"}}));
  EXPECT_EQ(slurm.launcher, LauncherKind::slurm);
  EXPECT_EQ(slurm.rank, 7);
  EXPECT_EQ(slurm.local_rank, 3);
  EXPECT_TRUE(launched_as_worker(
      fake_env({{"SLURM_PROCID", "7"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "3"}, {"SLURM_STEP_ID", "0"}})));
}

// An sbatch script's single task (or a stray RANK=0 WORLD_SIZE=1) is not a rank of a job: `ddpx train
// --nproc-per-node 2` run there must still start its two workers.
TEST(Bootstrap, AWorldOfOneIsNotAWorker) {
  EXPECT_FALSE(launched_as_worker(fake_env({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}})));
  EXPECT_FALSE(launched_as_worker(fake_env({{"RANK", "0"}, {"WORLD_SIZE", "1"}})));
  EXPECT_TRUE(launched_as_worker(fake_env({{"RANK", "0"}, {"WORLD_SIZE", "2"}})));
}

// launched_rank(): the CLI's one question before any job opens (cli/launch.cpp's refusals, the line rank 0 prints).
// A single process (no launcher, or a launcher's world of one) is nullopt; a rank of a job says which, of how many,
// started by whom, in the words the refusals print ("rank 1 of 2 started by torchrun").
TEST(Bootstrap, LaunchedRankSaysWhichRankOfWhichLauncher) {
  EXPECT_FALSE(launched_rank(fake_env({})).has_value());
  EXPECT_FALSE(launched_rank(fake_env({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}})).has_value());
  EXPECT_FALSE(launched_rank(fake_env({{"RANK", "0"}, {"WORLD_SIZE", "1"}})).has_value());
  const std::optional<LaunchedRank> torchrun = launched_rank(fake_env({{"RANK", "1"}, {"WORLD_SIZE", "2"}}));
  ASSERT_TRUE(torchrun.has_value());
  EXPECT_EQ(torchrun->rank, 1);
  EXPECT_EQ(torchrun->world_size, 2);
  EXPECT_EQ(torchrun->launcher, "torchrun");
  const std::optional<LaunchedRank> mpi =
      launched_rank(fake_env({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "4"}}));
  ASSERT_TRUE(mpi.has_value());
  EXPECT_EQ(mpi->rank, 0);  // rank 0 of a job is a launched rank too (it prints the lead's lines)
  EXPECT_EQ(mpi->world_size, 4);
  EXPECT_EQ(mpi->launcher, "Open MPI");
  const std::optional<LaunchedRank> slurm = launched_rank(
      fake_env({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"}, {"SLURM_STEP_ID", "0"}}));
  ASSERT_TRUE(slurm.has_value());
  EXPECT_EQ(slurm->rank, 5);
  EXPECT_EQ(slurm->launcher, "Slurm");
  // torchrun's variables win over an allocation's (bootstrap.hpp's order), as in detect_world().
  const std::optional<LaunchedRank> inside = launched_rank(
      fake_env({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}}));
  ASSERT_TRUE(inside.has_value());
  EXPECT_EQ(inside->rank, 3);
  EXPECT_EQ(inside->launcher, "torchrun");
  // launched_as_worker() is the same answer.
  EXPECT_TRUE(launched_as_worker(fake_env({{"RANK", "1"}, {"WORLD_SIZE", "2"}})));
  // A malformed rank variable is detect_world()'s error, naming it.
  EXPECT_THROW((void)launched_rank(fake_env({{"RANK", "x"}, {"WORLD_SIZE", "2"}})), Error);
}

TEST(Bootstrap, RanksOnThisNodeFromEachLauncherElseTheWholeWorld) {
  EXPECT_EQ(detect_world(fake_env({})).local_world_size, 1);
  EXPECT_EQ(detect_world(fake_env({{"RANK", "1"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"},
                                   {"LOCAL_WORLD_SIZE", "4"}})).local_world_size, 4);
  EXPECT_EQ(detect_world(fake_env({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                                   {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}}))
                .local_world_size, 2);
  EXPECT_EQ(detect_world(fake_env({{"PMI_RANK", "2"}, {"PMI_SIZE", "6"}, {"MPI_LOCALNRANKS", "3"}})).local_world_size,
            3);
  EXPECT_EQ(detect_world(fake_env({{"SLURM_PROCID", "7"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "3"},
                                   {"SLURM_STEP_ID", "0"}, {"SLURM_NTASKS_PER_NODE", "4"}})).local_world_size, 4);
  // Not said: every rank is assumed to share this node (threads are shared out conservatively).
  EXPECT_EQ(detect_world(fake_env({{"SLURM_PROCID", "7"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "3"},
                                   {"SLURM_STEP_ID", "0"}})).local_world_size, 8);
  // A hint, clamped rather than fatal: Slurm's requested per-node count can exceed a smaller job step.
  EXPECT_EQ(detect_world(fake_env({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "1"},
                                   {"SLURM_STEP_ID", "0"}, {"SLURM_NTASKS_PER_NODE", "4"}})).local_world_size, 2);
  EXPECT_EQ(detect_world(fake_env({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}}))
                .local_world_size, 3);
  EXPECT_EQ(detect_world(fake_env({{"PMI_RANK", "0"}, {"PMI_SIZE", "4"}, {"MPI_LOCALNRANKS", "two"}})).local_world_size,
            4);
}

TEST(Bootstrap, TorchrunVariablesWinOverTheAllocation) {
  WorldInfo world = detect_world(fake_env({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"},
                                           {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"},
                                           {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}}));
  EXPECT_EQ(world.launcher, LauncherKind::torchrun);
  EXPECT_EQ(world.rank, 1);
  EXPECT_EQ(world.world_size, 2);
  EXPECT_EQ(world.master_addr, "127.0.0.1");
  EXPECT_EQ(world.master_port, 29500);
  // No token derived from public facts (the port and the world size were guessable): empty, so the rendezvous
  // runs only on loopback unless DDPX_JOB_TOKEN is set (issue 13 point 7).
  EXPECT_EQ(world.job_token, "");
}

TEST(Bootstrap, JobTokenFromTheLauncher) {
  WorldInfo world = detect_world(fake_env({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"DDPX_JOB_TOKEN", "abc"}}));
  EXPECT_EQ(world.job_token, "abc");
}

TEST(Bootstrap, ErrorsNameTheVariable) {
  try {
    detect_world(fake_env({{"RANK", "x1"}, {"WORLD_SIZE", "2"}}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("RANK='x1'"), std::string::npos) << e.what();
  }
  try {
    detect_world(fake_env({{"RANK", "4"}, {"WORLD_SIZE", "4"}}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("RANK=4 is not below WORLD_SIZE=4"), std::string::npos) << e.what();
  }
  EXPECT_THROW(detect_world(fake_env({{"MASTER_PORT", "70000"}})), Error);
}

}  // namespace
}  // namespace ddpx
