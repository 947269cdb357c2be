// MPI launch detection and Slurm-derived rendezvous; see job_environment.hpp.
#include "dist/job_environment.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <string_view>
#include <tuple>

#include "core/error.hpp"
#include "dist/slurm_nodelist.hpp"

namespace ddpx {
namespace {

// Slurm set the ranks, or PMI did (`srun --mpi=pmi2`): the job step's variables apply.
bool slurm_or_pmi(const WorldInfo& world) {
  return world.launcher == LauncherKind::slurm || world.launcher == LauncherKind::pmi;
}

std::optional<uint64_t> read_number(const EnvLookup& env, const char* name) {
  std::optional<std::string> text = env(name);
  if (!text) return std::nullopt;
  uint64_t value = 0;
  auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), value);
  DDPX_REQUIRE(error == std::errc() && end == text->data() + text->size(),
               "environment variable {}='{}' is not a non-negative integer", name, *text);
  return value;
}

// Tasks on node `node_id` from Slurm's per-node counts: "2", "2(x3),1" (two tasks on each of 3 nodes, then one).
std::optional<int> tasks_on_node(const std::string& counts, uint64_t node_id) {
  uint64_t node = 0;
  size_t pos = 0;
  while (pos < counts.size()) {
    int tasks = 0;
    auto [end, error] = std::from_chars(counts.data() + pos, counts.data() + counts.size(), tasks);
    if (error != std::errc()) return std::nullopt;
    pos = end - counts.data();
    uint64_t repeat = 1;
    if (counts.compare(pos, 2, "(x") == 0) {
      auto [end2, error2] = std::from_chars(counts.data() + pos + 2, counts.data() + counts.size(), repeat);
      if (error2 != std::errc() || end2 == counts.data() + counts.size() || *end2 != ')') return std::nullopt;
      pos = end2 - counts.data() + 1;
    }
    if (node_id < node + repeat) return tasks;
    node += repeat;
    if (pos < counts.size() && counts[pos++] != ',') return std::nullopt;
  }
  return std::nullopt;
}

void complete_slurm_step(WorldInfo& world, const EnvLookup& env) {
  const std::optional<uint64_t> ntasks = read_number(env, "SLURM_NTASKS");
  const std::optional<uint64_t> step_tasks = read_number(env, "SLURM_STEP_NUM_TASKS");
  DDPX_REQUIRE(!ntasks || !step_tasks || *ntasks == *step_tasks,
               "Slurm environment: SLURM_NTASKS={} but SLURM_STEP_NUM_TASKS={}; one job step must agree on its "
               "task count (was SLURM_NTASKS exported from another job or step?)", *ntasks, *step_tasks);
  if (world.launcher == LauncherKind::slurm && world.world_size > 1)
    DDPX_REQUIRE(env("SLURM_LOCALID"), "Slurm environment: SLURM_PROCID={} of SLURM_NTASKS={} but SLURM_LOCALID is "
                 "not set; srun sets all three (export none of them by hand)", world.rank, world.world_size);
  if (world.launcher == LauncherKind::pmi && !env("MPI_LOCALRANKID") && env("SLURM_LOCALID") &&
      read_number(env, "SLURM_PROCID") == static_cast<uint64_t>(world.rank))
    world.local_rank = static_cast<int>(*read_number(env, "SLURM_LOCALID"));  // srun --mpi=pmi2
  if (!slurm_or_pmi(world)) return;
  if (std::optional<std::string> counts = env("SLURM_STEP_TASKS_PER_NODE");
      counts && !env("SLURM_NTASKS_PER_NODE") && !env("MPI_LOCALNRANKS"))
    if (std::optional<int> here = tasks_on_node(*counts, read_number(env, "SLURM_NODEID").value_or(0)))
      world.local_world_size = std::clamp(*here, world.local_rank + 1, world.world_size);
}

void derive_slurm_master(WorldInfo& world, const EnvLookup& env) {
  if (world.world_size < 2 || !slurm_or_pmi(world)) return;
  if (!env("SLURM_STEP_ID") && !env("SLURM_STEPID")) return;
  std::vector<std::string> origin;
  if (world.master_addr.empty()) {
    const char* variable = env("SLURM_STEP_NODELIST") ? "SLURM_STEP_NODELIST" : "SLURM_JOB_NODELIST";
    std::optional<std::string> list = env(variable);
    if (!list) return;  // not said: the rendezvous names MASTER_ADDR as missing
    world.master_addr = first_host(*list, variable);
    origin.push_back(fmt::format("MASTER_ADDR={} (first host of {}={})", world.master_addr, variable, *list));
    if (world.rank == 0)
      if (std::optional<std::string> here = env("SLURMD_NODENAME"); here && *here != world.master_addr)
        fail("Slurm environment: rank 0 runs on {} (SLURMD_NODENAME), not on {}, the first host of {}={}; with this "
             "task distribution export MASTER_ADDR=<rank 0's host> (and MASTER_PORT) before srun",
             *here, world.master_addr, variable, *list);
  }
  if (world.master_port == 0) {
    const std::optional<uint64_t> job = read_number(env, "SLURM_JOB_ID");
    const char* step_variable = env("SLURM_STEP_ID") ? "SLURM_STEP_ID" : "SLURM_STEPID";
    const std::optional<uint64_t> step = read_number(env, step_variable);
    DDPX_REQUIRE(job, "Slurm environment: {} is set but SLURM_JOB_ID is not, so no MASTER_PORT can be derived; "
                 "export MASTER_PORT", step_variable);
    world.master_port = slurm_derived_port(*job, *step);
    origin.push_back(fmt::format("MASTER_PORT={} (derived from SLURM_JOB_ID={}, {}={})", world.master_port, *job,
                                 step_variable, *step));
  }
  for (const std::string& part : origin) world.master_origin += (world.master_origin.empty() ? "" : ", ") + part;
}

}  // namespace

int slurm_derived_port(uint64_t job_id, uint64_t step_id) {
  return static_cast<int>(19000 + 64 * (job_id % 200) + step_id % 64);
}

bool started_by_mpi_launcher(const EnvLookup& env) {
  return env("OMPI_COMM_WORLD_SIZE").has_value() || env("PMIX_RANK").has_value();
}

void complete_job_environment(WorldInfo& world, const EnvLookup& env) {
  // Half of a launcher's pair means a hand-made or damaged environment: say which half is missing.
  const bool slurm_step = env("SLURM_STEP_ID") || env("SLURM_STEPID");
  for (const auto& [rank, size, who] :
       {std::tuple{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", LauncherKind::open_mpi},
        std::tuple{"PMI_RANK", "PMI_SIZE", LauncherKind::pmi}, std::tuple{"SLURM_PROCID", "SLURM_NTASKS", LauncherKind::slurm}}) {
    if (who == LauncherKind::slurm && !slurm_step) continue;  // sbatch without -n sets SLURM_PROCID alone
    DDPX_REQUIRE(env(rank).has_value() == env(size).has_value(),
                 "{} environment: {} is set but {} is not; the launcher sets both (export neither by hand)",
                 launcher_name(who),
                 env(rank) ? rank : size, env(rank) ? size : rank);
  }
  if (world.launcher == LauncherKind::slurm && !env("SLURM_STEP_ID") && !env("SLURM_STEPID")) {
    // An sbatch script or salloc shell: SLURM_PROCID is 0 and SLURM_NTASKS the allocation's. Not a rank.
    const WorldInfo single;
    world.rank = single.rank;
    world.world_size = single.world_size;
    world.local_rank = single.local_rank;
    world.local_world_size = single.local_world_size;
    world.launcher = single.launcher;
  }
  if (world.launcher != LauncherKind::torchrun)
    world.mpi_launched = started_by_mpi_launcher(env);
  if (world.launcher == LauncherKind::open_mpi || world.launcher == LauncherKind::slurm)
    if (const std::optional<uint64_t> pmix_rank = read_number(env, "PMIX_RANK"))
      DDPX_REQUIRE(*pmix_rank == static_cast<uint64_t>(world.rank),
                   "{} environment: PMIX_RANK={} but {}={}; the MPI launcher and {} disagree on this process's rank "
                   "(a launcher's variables exported into another job?)", launcher_name(world.launcher), *pmix_rank,
                   world.launcher == LauncherKind::slurm ? "SLURM_PROCID" : "OMPI_COMM_WORLD_RANK", world.rank,
                   launcher_name(world.launcher));
  if (env("SLURM_JOB_ID") || env("SLURM_STEP_ID")) complete_slurm_step(world, env);
  derive_slurm_master(world, env);
}

}  // namespace ddpx
