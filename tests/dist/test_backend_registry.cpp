// dist/backend_registry: every entry parses back, the choices in errors and --help come from the table, the device
// rules, the rule for --backend auto, the launch style and the torchrun/--nnodes refusals, and a backend this build
// lacks says how to get it.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "error_expect.hpp"
#include "dist/backend_registry.hpp"
#include "fake_env.hpp"

namespace ddpx {
namespace {

using testing::error_of;
using testing::expect_error;

using testing::fake_env;

TEST(BackendRegistry, EveryEntryParsesBackToItself) {
  std::set<std::string_view> names;
  for (const BackendEntry& entry : communication_backends()) {
    EXPECT_TRUE(names.insert(entry.name).second) << "two entries named " << entry.name;
    EXPECT_NE(entry.name, "auto");  // auto is the resolution rule, not an entry
    const BackendChoice choice = parse_backend(entry.name);
    ASSERT_FALSE(choice.is_auto());
    EXPECT_EQ(&choice.entry(), &entry);
    EXPECT_EQ(choice.name(), entry.name);
    EXPECT_TRUE(choice.is(entry.name));
    EXPECT_EQ(choice, BackendChoice::named(entry.name));
    EXPECT_EQ(find_backend(entry.name), &entry);
    EXPECT_TRUE(entry.serves(Device::cpu) || entry.serves(Device::cuda)) << entry.name;
    EXPECT_NE(entry.library, nullptr) << entry.name;
  }
  EXPECT_EQ(names, (std::set<std::string_view>{"nccl", "mpi", "gloo", "self"}));
  EXPECT_TRUE(parse_backend("auto").is_auto());
  EXPECT_EQ(parse_backend("auto").name(), "auto");
  EXPECT_EQ(parse_backend("auto"), BackendChoice());
  EXPECT_EQ(find_backend("auto"), nullptr);
}

TEST(BackendRegistry, TheChoicesInErrorsAndHelpComeFromTheTable) {
  std::string expected = "auto";
  const auto& backends = communication_backends();
  for (size_t i = 0; i < backends.size(); ++i)
    expected += std::string(i + 1 == backends.size() ? " or " : ", ") + std::string(backends[i].name);
  EXPECT_EQ(backend_choices(), expected);
  EXPECT_EQ(backend_choices(), "auto, nccl, mpi, gloo or self");
  EXPECT_EQ(error_of([] { parse_backend("ucc"); }), "--backend 'ucc' is not known; choose auto, nccl, mpi, gloo or self");
  EXPECT_EQ(error_of([] { parse_backend("Gloo"); }), "--backend 'Gloo' is not known; choose " + expected);
  EXPECT_EQ(error_of([] { backend_named("ucc"); }),
            "unknown communication backend 'ucc' (--backend): expected nccl, mpi, gloo or self");
  expect_error([] { make_communicator("ucc", WorldInfo{}); },
               {"unknown communication backend 'ucc' (--backend): expected nccl, mpi, gloo or self"});
  const std::string help = backend_help();
  EXPECT_EQ(help.rfind("auto (nccl on cuda; on cpu mpi under mpirun or --nproc-per-node, else gloo)", 0), 0u) << help;
  for (const BackendEntry& entry : backends) {
    EXPECT_NE(help.find(" | " + std::string(entry.name)), std::string::npos) << help;
    EXPECT_NE(help.find(entry.summary), std::string::npos) << entry.name;
  }
}

TEST(BackendRegistry, DeviceRulesAndTheirMessages) {
  EXPECT_EQ(error_of([] { require_serves(BackendChoice::named("nccl"), Device::cpu); }),
            "--backend nccl needs --device cuda (CPU training uses mpi or gloo)");
  EXPECT_EQ(error_of([] { require_serves(BackendChoice::named("gloo"), Device::cuda); }),
            "--backend gloo reduces host buffers: it needs --device cpu (GPU training uses nccl)");
  EXPECT_EQ(error_of([] { require_serves(BackendChoice::named("self"), Device::cuda); }),
            "--backend self (one process, the reducer without communication) runs on --device cpu only");
  // MPI reduces host buffers only: refused for GPUs before anything starts (the reducer would refuse it later).
  EXPECT_EQ(error_of([] { require_serves(BackendChoice::named("mpi"), Device::cuda); }),
            "--backend mpi reduces host buffers: it needs --device cpu (GPU training uses nccl; under mpirun or "
            "srun, `--backend auto` or `nccl` still uses MPI to share NCCL's id)");
  EXPECT_EQ(error_of([] { require_serves(BackendChoice::named("mpi"), Device::cpu); }), testing::kNoError);
  for (const Device device : {Device::cpu, Device::cuda}) {
    EXPECT_EQ(error_of([&] { require_serves(BackendChoice::automatic(), device); }), testing::kNoError);
    // Every entry either serves the device or says so in its own words.
    for (const BackendEntry& entry : communication_backends()) {
      const std::string message = error_of([&] { require_serves(BackendChoice(entry), device); });
      EXPECT_EQ(message, entry.serves(device) ? std::string(testing::kNoError) : std::string(entry.wrong_device));
      if (!entry.serves(device)) EXPECT_FALSE(entry.wrong_device.empty()) << entry.name;
    }
  }
  // auto resolves to a backend that serves the device, in every environment.
  for (const Device device : {Device::cpu, Device::cuda})
    for (const auto& env : {fake_env({}), fake_env({{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "0"}})})
      EXPECT_TRUE(resolve_backend(BackendChoice::automatic(), device, env).serves(device));
}

TEST(BackendRegistry, AutoOnCpuIsMpiUnderAnMpiLauncherElseGloo) {
  const BackendChoice automatic;
  const std::string_view cpu_default = backend_named("gloo").built() ? "gloo" : "mpi";
  EXPECT_EQ(resolve_backend(automatic, Device::cuda, fake_env({})).name, "nccl");
  EXPECT_EQ(resolve_backend(automatic, Device::cuda, fake_env({{"OMPI_COMM_WORLD_SIZE", "2"}})).name, "nccl");
  EXPECT_EQ(resolve_backend(automatic, Device::cpu, fake_env({})).name, cpu_default);
  EXPECT_EQ(resolve_backend(automatic, Device::cpu, fake_env({{"RANK", "0"}, {"WORLD_SIZE", "2"}})).name, cpu_default);
  EXPECT_EQ(resolve_backend(automatic, Device::cpu, fake_env({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}})).name,
            cpu_default);
  EXPECT_EQ(resolve_backend(automatic, Device::cpu,
                            fake_env({{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "0"}})).name,
            "mpi");
  // PMI-2 alone (srun --mpi=pmi2) is no launcher Open MPI can join (it aborts in MPI_Init there): Gloo, where built.
  EXPECT_EQ(resolve_backend(automatic, Device::cpu, fake_env({{"PMI_SIZE", "2"}, {"PMI_RANK", "1"}})).name,
            cpu_default);
  EXPECT_EQ(resolve_backend(automatic, Device::cpu, fake_env({{"PMIX_RANK", "1"}})).name, "mpi");
  // A named backend is itself, whatever the launcher.
  EXPECT_EQ(resolve_backend(BackendChoice::named("gloo"), Device::cpu, fake_env({{"OMPI_COMM_WORLD_SIZE", "2"}})).name,
            "gloo");
  EXPECT_EQ(resolve_backend(BackendChoice::named("mpi"), Device::cpu, fake_env({})).name, "mpi");
  EXPECT_EQ(&resolve_backend(BackendChoice::named("self"), Device::cpu, fake_env({})), &backend_named("self"));
}

// The error for a backend this build lacks: the flag as typed, how to get it, where to see what is built.
std::string not_built_error(const BackendEntry& entry) {
  return "--backend " + std::string(entry.name) + " is not available in this build: " + std::string(entry.not_built) +
         " (`ddpx --version` lists the backends built)";
}

TEST(BackendRegistry, ABackendNotBuiltSaysHowToGetIt) {
  // Every entry this build lacks names the flag and how to get it; the message is the entry's.
  for (const BackendEntry& entry : communication_backends()) {
    BackendEntry missing = entry;
    missing.factory = nullptr;
    EXPECT_FALSE(missing.built());
    if (&entry != &backend_named("self")) EXPECT_FALSE(entry.not_built.empty()) << entry.name;
    EXPECT_EQ(error_of([&] { make_communicator(missing, WorldInfo{}); }),
              not_built_error(entry));
    if (!entry.built()) EXPECT_EQ(error_of([&] { make_communicator(entry.name, WorldInfo{}); }), not_built_error(entry));
  }
  EXPECT_EQ(backend_named("gloo").not_built, "install libgloo-dev and rebuild");
  EXPECT_EQ(backend_named("mpi").not_built, "this ddpx was built without MPI (install libopenmpi-dev and rebuild)");
  EXPECT_EQ(backend_named("nccl").not_built, "this ddpx was built without CUDA; use --backend mpi");
  EXPECT_TRUE(backend_named("self").built());
#ifdef DDPX_HAVE_GLOO
  EXPECT_TRUE(backend_named("gloo").built());
#else
  EXPECT_EQ(error_of([] { make_communicator("gloo", WorldInfo{}); }),
            "--backend gloo is not available in this build: install libgloo-dev and rebuild (`ddpx --version` lists "
            "the backends built)");
#endif
#ifdef DDPX_HAVE_MPI
  EXPECT_TRUE(backend_named("mpi").built());
#else
  EXPECT_FALSE(backend_named("mpi").built());
#endif
}

TEST(BackendRegistry, TheSelfBackendIsOneRank) {
  WorldInfo two;
  two.world_size = 2;
  two.launcher = LauncherKind::torchrun;
  EXPECT_EQ(error_of([&] { make_communicator("self", two); }),
            "backend 'self' runs one process but the torchrun environment says world size 2; use --backend mpi or "
            "nccl");
  const std::unique_ptr<Communicator> self = make_communicator("self", WorldInfo{});
  EXPECT_EQ(self->size(), 1);
  EXPECT_EQ(self->backend_name(), "self");  // the built communicator answers to its entry's name
  EXPECT_EQ(backend_named("self").library(), "none (one rank: the self backend)");
}

TEST(BackendRegistry, TorchrunRefusalNamesTheRankAndWhatToDo) {
  WorldInfo world;
  world.rank = 1;
  world.world_size = 3;
  EXPECT_EQ(error_of([&] { require_joins_torchrun(backend_named("mpi"), world, true); }),
            "rank 1: torchrun started this rank (world size 3), but the MPI backend's ranks must come from mpirun "
            "or srun; under torchrun use --backend gloo (what --backend auto picks where Gloo is built in), or start "
            "`mpirun -np 3 ddpx train --device cpu ...` or `ddpx train --device cpu --nproc-per-node 3 ...`");
  EXPECT_EQ(error_of([&] { require_joins_torchrun(backend_named("mpi"), world, false); }), testing::kNoError);
  for (const char* joins : {"gloo", "nccl", "self"})
    EXPECT_EQ(error_of([&] { require_joins_torchrun(backend_named(joins), world, true); }), testing::kNoError);
  EXPECT_EQ(error_of([&] { require_joins_torchrun(backend_named("mpi"), WorldInfo{}, true); }), testing::kNoError);
}

TEST(BackendRegistry, LaunchStyleAndNnodes) {
  // cuda: ddpx's own processes, one per GPU, whatever the backend; cpu: the entry's, auto as mpi (under mpirun).
  for (const char* name : {"auto", "nccl", "mpi"})
    EXPECT_EQ(local_launch(parse_backend(name), Device::cuda), LocalLaunch::own_processes) << name;
  EXPECT_EQ(local_launch(parse_backend("gloo"), Device::cpu), LocalLaunch::own_processes);
  EXPECT_EQ(local_launch(parse_backend("mpi"), Device::cpu), LocalLaunch::mpirun);
  EXPECT_EQ(local_launch(parse_backend("auto"), Device::cpu), LocalLaunch::mpirun);
  EXPECT_EQ(local_launch(parse_backend("self"), Device::cpu), LocalLaunch::mpirun);

  EXPECT_EQ(error_of([] { require_spans_nnodes(parse_backend("mpi"), Device::cpu, 2); }),
            "--nnodes 2 with --device cpu --backend mpi: MPI spans nodes only under mpirun (`mpirun -H "
            "host1:G,host2:G -np N ddpx train --device cpu --backend mpi ...`, without --nnodes); with --nnodes use "
            "--backend gloo");
  EXPECT_EQ(error_of([] { require_spans_nnodes(parse_backend("mpi"), Device::cpu, 1); }), testing::kNoError);
  EXPECT_EQ(error_of([] { require_spans_nnodes(parse_backend("mpi"), Device::cuda, 2); }), testing::kNoError);
  for (const char* name : {"auto", "gloo"})
    EXPECT_EQ(error_of([&] { require_spans_nnodes(parse_backend(name), Device::cpu, 4); }), testing::kNoError);
}

TEST(BackendRegistry, MpiSessionForTheMpiBackendAndUnderAnMpiLauncher) {
  EXPECT_TRUE(needs_mpi_session(backend_named("mpi"), WorldInfo{}));
  EXPECT_FALSE(needs_mpi_session(backend_named("nccl"), WorldInfo{}));
  EXPECT_FALSE(needs_mpi_session(backend_named("gloo"), WorldInfo{}));
  WorldInfo mpirun;
  mpirun.world_size = 2;
  mpirun.mpi_launched = true;
  for (const BackendEntry& entry : communication_backends()) EXPECT_TRUE(needs_mpi_session(entry, mpirun));
  expect_error([] { needs_mpi_session("ucc", WorldInfo{}); }, {"unknown communication backend 'ucc'"});
}

TEST(BackendRegistry, VersionLineListsWhatThisBuildHas) {
  // `ddpx --version`'s backends line: what scripts and tests ask before choosing a CPU backend.
  const std::string line = built_backends_line();
  EXPECT_EQ(line.rfind("backends: ", 0), 0u) << line;
  EXPECT_NE(line.find("self"), std::string::npos) << line;
  for (const BackendEntry& entry : communication_backends()) {
    const std::string name(entry.name);
    const size_t missing = line.find("(not built:");
    const size_t at = line.find(name);
    ASSERT_NE(at, std::string::npos) << name << " is not in " << line;
    EXPECT_EQ(entry.built(), missing == std::string::npos || at < missing) << name << ": " << line;
  }
#ifdef DDPX_HAVE_GLOO
  EXPECT_EQ(line.find("not built: gloo"), std::string::npos) << line;
#else
  EXPECT_NE(line.find("gloo"), std::string::npos) << line;
  EXPECT_NE(line.find("(not built:"), std::string::npos) << line;
#endif
}

}  // namespace
}  // namespace ddpx
