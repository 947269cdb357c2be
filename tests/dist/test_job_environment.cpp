// The environment each way of starting ranks produces (srun with per-task GPU binding, --gpus-per-task,
// compressed node lists, no MASTER_*; srun --mpi=pmix and pmi2; mpirun; an sbatch script) and what ddpx makes of
// it: rank, local rank, the GPU it picks (device count injected), the master address and port, whether MPI comes
// up; and conflicting or incomplete variables, each an error naming them.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>

#include "dist/backend_registry.hpp"
#include "dist/bootstrap.hpp"
#include "dist/bootstrap_exchange.hpp"
#include "dist/gpu_selection.hpp"
#include "dist/job_environment.hpp"
#include "error_expect.hpp"
#include "fake_env.hpp"

namespace ddpx {
namespace {

using testing::expect_error;
using Vars = std::map<std::string, std::string>;

using testing::fake_env;

// What `srun -N 2 -n 8` (4 tasks per node) sets for task `rank`, as a real slurmd does (see slurm_jobs.sh).
Vars srun_task(int rank, const std::string& nodelist = "gpu[01-02]") {
  const int node = rank / 4;
  return {{"SLURM_JOB_ID", "4242"},        {"SLURM_STEP_ID", "3"},
          {"SLURM_PROCID", std::to_string(rank)}, {"SLURM_LOCALID", std::to_string(rank % 4)},
          {"SLURM_NODEID", std::to_string(node)}, {"SLURM_NTASKS", "8"},
          {"SLURM_STEP_NUM_TASKS", "8"},   {"SLURM_STEP_TASKS_PER_NODE", "4(x2)"},
          {"SLURM_JOB_NODELIST", nodelist}, {"SLURM_STEP_NODELIST", nodelist},
          {"SLURMD_NODENAME", node == 0 ? "gpu01" : "gpu02"}};
}

struct Picked {
  WorldInfo world;
  int device = -1;
};

Picked pick(const Vars& vars, int visible_gpus) {
  const EnvLookup env = fake_env(vars);
  Picked p{detect_world(env)};
  p.device = choose_cuda_device(gpu_choice_input(p.world, visible_gpus, env)).device;
  return p;
}

TEST(SlurmEnvironment, PlainSrunDerivesMasterAddressAndPortAndUsesTheLocalRank) {
  for (int rank : {0, 5, 7}) {
    const Picked p = pick(srun_task(rank), 4);
    EXPECT_EQ(p.world.launcher, LauncherKind::slurm);
    EXPECT_EQ(p.world.rank, rank);
    EXPECT_EQ(p.world.world_size, 8);
    EXPECT_EQ(p.world.local_rank, rank % 4);
    EXPECT_EQ(p.world.local_world_size, 4);  // from SLURM_STEP_TASKS_PER_NODE "4(x2)"
    EXPECT_EQ(p.device, rank % 4);
    EXPECT_EQ(p.world.master_addr, "gpu01");
    EXPECT_EQ(p.world.master_port, slurm_derived_port(4242, 3));
    EXPECT_FALSE(p.world.mpi_launched);
    EXPECT_NE(p.world.master_origin.find("first host of SLURM_STEP_NODELIST=gpu[01-02]"), std::string::npos);
  }
  EXPECT_EQ(slurm_derived_port(4242, 3), 19000 + 64 * 42 + 3);
  EXPECT_NE(slurm_derived_port(4242, 3), slurm_derived_port(4242, 4));  // the next step of the job
  for (uint64_t job : {0u, 199u, 4242u, 4294967295u})
    for (uint64_t step : {0u, 63u, 4294967294u}) {
      EXPECT_GE(slurm_derived_port(job, step), 19000);
      EXPECT_LT(slurm_derived_port(job, step), 32768);
    }
}

TEST(SlurmEnvironment, RanksPerNodeFromTheStepsTaskCounts) {
  // srun -n 5 over 3 nodes: "2(x2),1". The last task is alone on node 2; the first two share node 0.
  Vars last = srun_task(0);
  last.insert_or_assign("SLURM_PROCID", "4");
  last.insert_or_assign("SLURM_LOCALID", "0");
  last.insert_or_assign("SLURM_NODEID", "2");
  last.insert_or_assign("SLURM_NTASKS", "5");
  last.insert_or_assign("SLURM_STEP_NUM_TASKS", "5");
  last.insert_or_assign("SLURM_STEP_TASKS_PER_NODE", "2(x2),1");
  last.insert_or_assign("SLURMD_NODENAME", "gpu03");
  EXPECT_EQ(detect_world(fake_env(last)).local_world_size, 1);
  last.insert_or_assign("SLURM_NODEID", "1");
  last.insert_or_assign("SLURM_LOCALID", "1");
  EXPECT_EQ(detect_world(fake_env(last)).local_world_size, 2);
}

TEST(SlurmEnvironment, WholeNodeGresUsesTheLocalRankAmongTheNodesGpus) {
  // srun --ntasks-per-node 4 --gres=gpu:4: every task sees the node's four GPUs.
  Vars task = srun_task(6);
  task["CUDA_VISIBLE_DEVICES"] = "0,1,2,3";
  EXPECT_EQ(pick(task, 4).device, 2);
}

TEST(SlurmEnvironment, PerTaskGpuBindingUsesTheOneVisibleGpu) {
  // srun --gpus-per-task=1 or --gpu-bind=single:1: task 3 of node 0 sees only its GPU, as CUDA_VISIBLE_DEVICES=3.
  Vars task = srun_task(3);
  task["CUDA_VISIBLE_DEVICES"] = "3";
  EXPECT_EQ(pick(task, 1).device, 0);
  // --gpus-per-task=2: every task sees two; the local rank among them would be out of range.
  task["CUDA_VISIBLE_DEVICES"] = "6,7";
  expect_error([&] { pick(task, 2); }, {"local rank 3", "CUDA_VISIBLE_DEVICES=6,7"});
}

TEST(SlurmEnvironment, CompressedNodeListsAndExportedMasterVariables) {
  EXPECT_EQ(pick(srun_task(4, "a[1-2],b3"), 4).world.master_addr, "a1");
  Vars rack = srun_task(6, "rack[1-2]-n[01-02]");
  EXPECT_EQ(pick(rack, 4).world.master_addr, "rack1-n01");
  // The step's list wins over the job's (a step on part of the allocation).
  Vars step = srun_task(5);
  step["SLURM_JOB_NODELIST"] = "gpu[00-02]";
  EXPECT_EQ(pick(step, 4).world.master_addr, "gpu01");
  step.erase("SLURM_STEP_NODELIST");
  EXPECT_EQ(pick(step, 4).world.master_addr, "gpu00");
  // Exported variables are kept as they are.
  Vars exported = srun_task(5);
  exported["MASTER_ADDR"] = "10.0.0.9";
  exported["MASTER_PORT"] = "29400";
  const Picked p = pick(exported, 4);
  EXPECT_EQ(p.world.master_addr, "10.0.0.9");
  EXPECT_EQ(p.world.master_port, 29400);
  EXPECT_TRUE(p.world.master_origin.empty());
  expect_error([] { pick(srun_task(1, "gpu[01-02"), 4); }, {"SLURM_STEP_NODELIST='gpu[01-02'", "never closed"});
}

TEST(SlurmEnvironment, RankZeroOffTheFirstHostIsToldToExportMasterAddr) {
  Vars task = srun_task(0);
  task["SLURMD_NODENAME"] = "gpu02";  // e.g. srun -m arbitrary
  expect_error([&] { pick(task, 4); }, {"rank 0 runs on gpu02 (SLURMD_NODENAME)", "export MASTER_ADDR"});
}

TEST(SlurmEnvironment, AnSbatchScriptIsOneProcessNotRankZeroOfTheAllocation) {
  // What slurmd sets in the batch script of `sbatch -n 2` (no SLURM_STEP_ID there).
  const Vars batch = {{"SLURM_JOB_ID", "7"},  {"SLURM_PROCID", "0"}, {"SLURM_LOCALID", "0"},
                      {"SLURM_NTASKS", "2"},  {"SLURM_NODEID", "0"}, {"SLURM_JOB_NODELIST", "vm"},
                      {"SLURM_TASKS_PER_NODE", "2"}};
  const WorldInfo world = detect_world(fake_env(batch));
  EXPECT_EQ(world.world_size, 1);
  EXPECT_EQ(world.launcher, LauncherKind::none);
  EXPECT_FALSE(launched_as_worker(fake_env(batch)));
}

TEST(MpiEnvironment, EveryMpiLauncherBringsUpMpi) {
  const WorldInfo ompi = detect_world(fake_env({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                                                {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"PMIX_RANK", "1"}}));
  EXPECT_TRUE(ompi.mpi_launched);
  EXPECT_TRUE(needs_mpi_session("nccl", ompi));
  EXPECT_TRUE(ompi.master_addr.empty());  // the NCCL id goes over MPI: no MASTER_* needed
  Vars pmix = srun_task(2);
  pmix["PMIX_RANK"] = "2";  // srun --mpi=pmix
  const WorldInfo slurm = detect_world(fake_env(pmix));
  EXPECT_EQ(slurm.launcher, LauncherKind::slurm);
  EXPECT_TRUE(slurm.mpi_launched);
  EXPECT_TRUE(needs_mpi_session("nccl", slurm));
  Vars pmi2 = srun_task(6);  // srun --mpi=pmi2: PMI_RANK/PMI_SIZE, no MPI_LOCALRANKID
  pmi2["PMI_RANK"] = "6";
  pmi2["PMI_SIZE"] = "8";
  const Picked p = pick(pmi2, 4);
  EXPECT_EQ(p.world.launcher, LauncherKind::pmi);
  EXPECT_FALSE(p.world.mpi_launched);  // Open MPI cannot join PMI-2: NCCL meets at the derived rendezvous
  EXPECT_EQ(p.world.master_addr, "gpu01");
  EXPECT_EQ(p.world.local_rank, 2);  // from SLURM_LOCALID
  EXPECT_EQ(p.device, 2);
  // torchrun inside an allocation: its variables win and nothing asks for MPI.
  Vars torchrun = pmix;
  torchrun.insert({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}});
  EXPECT_FALSE(detect_world(fake_env(torchrun)).mpi_launched);
  EXPECT_FALSE(needs_mpi_session("nccl", detect_world(fake_env(srun_task(1)))));
  EXPECT_TRUE(needs_mpi_session("mpi", WorldInfo{}));
}

TEST(LauncherEnvironment, ConflictingOrIncompleteVariablesNameThem) {
  Vars pmix = srun_task(2);
  pmix["PMIX_RANK"] = "3";
  expect_error([&] { detect_world(fake_env(pmix)); }, {"PMIX_RANK=3 but SLURM_PROCID=2"});
  expect_error([] {
    detect_world(fake_env({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"PMIX_RANK", "0"}}));
  }, {"PMIX_RANK=0 but OMPI_COMM_WORLD_RANK=1"});
  Vars counts = srun_task(1);
  counts["SLURM_STEP_NUM_TASKS"] = "4";
  expect_error([&] { detect_world(fake_env(counts)); }, {"SLURM_NTASKS=8 but SLURM_STEP_NUM_TASKS=4"});
  Vars no_local = srun_task(1);
  no_local.erase("SLURM_LOCALID");
  expect_error([&] { detect_world(fake_env(no_local)); }, {"SLURM_LOCALID is not set"});
  Vars no_job = srun_task(1);
  no_job.erase("SLURM_JOB_ID");
  expect_error([&] { detect_world(fake_env(no_job)); }, {"SLURM_JOB_ID is not", "export MASTER_PORT"});
  expect_error([] { detect_world(fake_env({{"OMPI_COMM_WORLD_RANK", "1"}})); },
               {"OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not"});
  expect_error([] { detect_world(fake_env({{"PMI_SIZE", "2"}})); }, {"PMI_SIZE is set but PMI_RANK is not"});
  Vars no_ntasks = srun_task(1);
  no_ntasks.erase("SLURM_NTASKS");
  no_ntasks.erase("SLURM_STEP_NUM_TASKS");
  expect_error([&] { detect_world(fake_env(no_ntasks)); }, {"SLURM_PROCID is set but SLURM_NTASKS is not"});
  // An sbatch script without -n: SLURM_PROCID alone, no step. One process, no error.
  EXPECT_EQ(detect_world(fake_env({{"SLURM_JOB_ID", "9"}, {"SLURM_PROCID", "0"}})).world_size, 1);
  Vars bad_step = srun_task(1);
  bad_step["SLURM_STEP_ID"] = "x";
  expect_error([&] { detect_world(fake_env(bad_step)); }, {"SLURM_STEP_ID='x'"});
}

// The derived address and port are named when the rendezvous cannot use them (here: the port is taken).
TEST(SlurmEnvironment, ABusyDerivedPortIsNamedWithItsOrigin) {
  Vars task = srun_task(0, "127.0.0.1");
  task.erase("SLURMD_NODENAME");
  task["SLURM_NTASKS"] = task["SLURM_STEP_NUM_TASKS"] = "2";
  task["SLURM_STEP_TASKS_PER_NODE"] = "2";
  const WorldInfo world = detect_world(fake_env(task));
  ASSERT_EQ(world.master_addr, "127.0.0.1");
  const int holder = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(holder, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(world.master_port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool held = ::bind(holder, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                    ::listen(holder, 1) == 0;  // else someone else holds it: the rendezvous fails all the same
  (void)held;
  expect_error([&] {
    broadcast_from_rank0(world, "test id", std::vector<uint8_t>(128, 7), std::chrono::seconds(5), fake_env(task));
  },
               {"MASTER_PORT=" + std::to_string(world.master_port) + " (derived from SLURM_JOB_ID=4242, SLURM_STEP_ID=3)",
                "MASTER_ADDR=127.0.0.1 (first host of SLURM_STEP_NODELIST=127.0.0.1)", "export MASTER_ADDR and MASTER_PORT"});
  ::close(holder);
}

}  // namespace
}  // namespace ddpx
