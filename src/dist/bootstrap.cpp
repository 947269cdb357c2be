// Bootstrap: environment detection (the backends and make_communicator are dist/backend_registry's).
#include "dist/bootstrap.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "dist/job_environment.hpp"

namespace ddpx {
namespace {

struct LauncherVariables {
  LauncherKind launcher;
  const char* rank;
  const char* size;
  const char* local_rank;  // may be absent from the environment
  const char* local_size;  // may be absent too
};

constexpr LauncherVariables kLaunchers[] = {
    {LauncherKind::torchrun, "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {LauncherKind::open_mpi, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {LauncherKind::pmi, "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {LauncherKind::slurm, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"},
};

int parse_int(const EnvLookup& env, const std::string& name, int fallback) {
  std::optional<std::string> text = env(name);
  if (!text) return fallback;
  int value = 0;
  auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), value);
  DDPX_REQUIRE(error == std::errc() && end == text->data() + text->size() && value >= 0,
               "environment variable {}='{}' is not a non-negative integer", name, *text);
  return value;
}

}  // namespace

const char* launcher_name(LauncherKind kind) {
  switch (kind) {
    case LauncherKind::none: return "none";
    case LauncherKind::torchrun: return "torchrun";
    case LauncherKind::open_mpi: return "Open MPI";
    case LauncherKind::pmi: return "PMI";
    case LauncherKind::slurm: return "Slurm";
  }
  DDPX_INTERNAL_FAIL("launcher kind {} has no name", static_cast<int>(kind));
}

EnvLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (!value) return std::nullopt;
    return std::string(value);
  };
}

std::optional<LaunchedRank> launched_rank(const EnvLookup& env) {
  const WorldInfo world = detect_world(env);
  if (world.world_size <= 1) return std::nullopt;
  return LaunchedRank{.rank = world.rank, .world_size = world.world_size, .launcher = launcher_name(world.launcher)};
}

bool launched_as_worker(const EnvLookup& env) { return launched_rank(env).has_value(); }

WorldInfo detect_world(const EnvLookup& env) {
  WorldInfo world;
  for (const LauncherVariables& vars : kLaunchers) {
    if (!env(vars.rank) || !env(vars.size)) continue;
    world.launcher = vars.launcher;
    world.rank = parse_int(env, vars.rank, 0);
    world.world_size = parse_int(env, vars.size, 1);
    world.local_rank = parse_int(env, vars.local_rank, 0);
    DDPX_REQUIRE(world.world_size >= 1 && world.rank < world.world_size,
                 "{} environment: {}={} is not below {}={} (every rank must be in 0..world size - 1)",
                 launcher_name(world.launcher), vars.rank, world.rank, vars.size, world.world_size);
    DDPX_REQUIRE(world.local_rank < world.world_size, "{} environment: {}={} is not below {}={}",
                 launcher_name(world.launcher),
                 vars.local_rank, world.local_rank, vars.size, world.world_size);
    // Only a hint (CPU threads per rank), and Slurm's is the requested count, inherited by smaller job steps:
    // an unreadable or inconsistent value is clamped into [local rank + 1, world size], never fatal.
    int local_size = world.world_size;
    if (std::optional<std::string> text = env(vars.local_size)) {
      auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), local_size);
      if (error != std::errc() || end != text->data() + text->size()) local_size = world.world_size;
    }
    world.local_world_size = std::clamp(local_size, world.local_rank + 1, world.world_size);
    break;
  }
  world.master_addr = env("MASTER_ADDR").value_or("");
  world.master_port = parse_int(env, "MASTER_PORT", 0);
  DDPX_REQUIRE(world.master_port < 65536, "MASTER_PORT={} is not a TCP port (1..65535)", world.master_port);
  complete_job_environment(world, env);
  world.job_token = env("DDPX_JOB_TOKEN").value_or("");
  // Under torchrun, its run id (a random UUID with --standalone; --rdzv-id otherwise) and restart count: processes
  // of another job or of an earlier attempt are rejected, and an outsider cannot guess a random run id.
  const std::string run_id = env("TORCHELASTIC_RUN_ID").value_or("");
  if (world.job_token.empty() && !run_id.empty() && run_id != "none")
    world.job_token = "torchrun-" + run_id + "-attempt" + env("TORCHELASTIC_RESTART_COUNT").value_or("0");
  return world;
}

}  // namespace ddpx
