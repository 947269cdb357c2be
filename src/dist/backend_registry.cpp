// The backend registry (see backend_registry.hpp for the guarantees). One entry per backend below; the rule for
// --backend auto is resolve_backend(), next to the table.
#include "dist/backend_registry.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "dist/gpu_selection.hpp"
#include "dist/job_environment.hpp"
#include "dist/self_communicator.hpp"
#ifdef DDPX_HAVE_MPI
#include "dist/mpi_communicator.hpp"
#include "dist/mpi_session.hpp"
#endif
#ifdef DDPX_HAVE_GLOO
#include "dist/gloo_communicator.hpp"
#endif
#ifdef DDPX_HAVE_CUDA
#include "dist/nccl_communicator.hpp"
#endif

namespace ddpx {
namespace {

// Each backend's factory, or null where this build lacks it (its entry's not_built then says how to get it).
#ifdef DDPX_HAVE_CUDA
constexpr BackendFactory kNcclFactory = connect_nccl;
#else
constexpr BackendFactory kNcclFactory = nullptr;
#endif
#ifdef DDPX_HAVE_MPI
constexpr BackendFactory kMpiFactory = connect_mpi;
std::string mpi_library() { return MpiSession::library_version(); }
#else
constexpr BackendFactory kMpiFactory = nullptr;
std::string mpi_library() { return "MPI"; }
#endif
#ifdef DDPX_HAVE_GLOO
constexpr BackendFactory kGlooFactory = connect_gloo;
#else
constexpr BackendFactory kGlooFactory = nullptr;
#endif

std::string nccl_library() {
  const int code = nccl_library_version_code();
  return code > 0 ? fmt::format("NCCL {} (nccl-library={})", nccl_version_text(code), code) : "NCCL";
}

}  // namespace

const std::vector<BackendEntry>& communication_backends() {
  static const std::vector<BackendEntry> backends = {
      {.name = "nccl",
       .summary = "GPU buffers over NCCL, --device cuda",
       .serves_cpu = false,
       .serves_cuda = true,
       .wrong_device = "--backend nccl needs --device cuda (CPU training uses mpi or gloo)",
       .not_built = "this ddpx was built without CUDA; use --backend mpi",
       .cpu_launch = LocalLaunch::own_processes,
       .factory = kNcclFactory,
       .library = nccl_library},
      {.name = "mpi",
       .summary = "host buffers over MPI: ranks started by mpirun, srun --mpi=pmix or --nproc-per-node",
       .serves_cpu = true,
       .serves_cuda = false,
       .wrong_device = "--backend mpi reduces host buffers: it needs --device cpu (GPU training uses nccl; under "
                       "mpirun or srun, `--backend auto` or `nccl` still uses MPI to share NCCL's id)",
       .not_built = "this ddpx was built without MPI (install libopenmpi-dev and rebuild)",
       .needs_mpi_session = true,
       .torchrun_refusal = "the MPI backend's ranks must come from mpirun or srun; under torchrun use --backend gloo "
                           "(what --backend auto picks where Gloo is built in), or start `mpirun -np {world} ddpx "
                           "train --device cpu ...` or `ddpx train --device cpu --nproc-per-node {world} ...`",
       .cpu_launch = LocalLaunch::mpirun,
       .nnodes_refusal = "MPI spans nodes only under mpirun (`mpirun -H host1:G,host2:G -np N ddpx train --device "
                         "cpu --backend mpi ...`, without --nnodes); with --nnodes use --backend gloo",
       .factory = kMpiFactory,
       .library = mpi_library},
      {.name = "gloo",
       .summary = "CPU over TCP, no MPI: ranks started by --nproc-per-node, torchrun or any launcher that sets "
                  "RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT",
       .serves_cpu = true,
       .serves_cuda = false,
       .wrong_device = "--backend gloo reduces host buffers: it needs --device cpu (GPU training uses nccl)",
       .not_built = "install libgloo-dev and rebuild",
       .cpu_launch = LocalLaunch::own_processes,
       .factory = kGlooFactory,
       .library = [] { return std::string("Gloo"); }},
      {.name = "self",
       .summary = "--device cpu, one process: the reducer and hooks without communication",
       .serves_cpu = true,
       .serves_cuda = false,
       .wrong_device = "--backend self (one process, the reducer without communication) runs on --device cpu only",
       .cpu_launch = LocalLaunch::mpirun,
       .factory = connect_self,
       .library = [] { return std::string("none (one rank: the self backend)"); }},
  };
  return backends;
}

const BackendEntry* find_backend(std::string_view name) {
  for (const BackendEntry& entry : communication_backends())
    if (entry.name == name) return &entry;
  return nullptr;
}

namespace {

// "nccl, mpi, gloo or self" (with a leading "auto, " when asked): the table's names in order.
std::string listed_names(bool with_auto) {
  std::vector<std::string_view> names;
  if (with_auto) names.push_back("auto");
  for (const BackendEntry& entry : communication_backends()) names.push_back(entry.name);
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

}  // namespace

const BackendEntry& backend_named(std::string_view name) {
  if (const BackendEntry* entry = find_backend(name)) return *entry;
  fail("unknown communication backend '{}' (--backend): expected {}", name, listed_names(false));
}

const BackendEntry& BackendChoice::entry() const {
  DDPX_INTERNAL_ASSERT(entry_ != nullptr, "BackendChoice::entry() of auto: resolve_backend() first");
  return *entry_;
}

BackendChoice parse_backend(std::string_view text) {
  if (text == "auto") return BackendChoice::automatic();
  if (const BackendEntry* entry = find_backend(text)) return BackendChoice(*entry);
  fail("--backend '{}' is not known; choose {}", text, backend_choices());
}

std::string backend_choices() { return listed_names(true); }

std::string backend_help() {
  std::string out = "auto (nccl on cuda; on cpu mpi under mpirun or --nproc-per-node, else gloo)";
  for (const BackendEntry& entry : communication_backends())
    out += entry.summary.empty() ? fmt::format(" | {}", entry.name) : fmt::format(" | {} ({})", entry.name, entry.summary);
  return out;
}

const BackendEntry& resolve_backend(BackendChoice requested, Device device, const EnvLookup& env) {
  if (!requested.is_auto()) return requested.entry();
  if (device == Device::cuda) return backend_named("nccl");
  const bool gloo_built = backend_named("gloo").built();
  return backend_named(started_by_mpi_launcher(env) || !gloo_built ? "mpi" : "gloo");
}

LocalLaunch local_launch(BackendChoice requested, Device device) {
  if (device == Device::cuda) return LocalLaunch::own_processes;  // one process per GPU, whatever the backend
  return (requested.is_auto() ? backend_named("mpi") : requested.entry()).cpu_launch;
}

void require_serves(BackendChoice requested, Device device) {
  if (requested.is_auto()) return;  // auto resolves to a backend of the device
  const BackendEntry& entry = requested.entry();
  DDPX_REQUIRE(entry.serves(device), "{}", entry.wrong_device);
}

void require_joins_torchrun(const BackendEntry& backend, const WorldInfo& world, bool torchrun_started) {
  if (backend.torchrun_refusal.empty() || world.world_size <= 1 || !torchrun_started) return;
  fail("rank {}: torchrun started this rank (world size {}), but {}", world.rank, world.world_size,
       fmt::format(fmt::runtime(backend.torchrun_refusal), fmt::arg("world", world.world_size)));
}

void require_spans_nnodes(BackendChoice requested, Device device, int nnodes) {
  // The workers of --nnodes see torchrun-style variables, so auto picks gloo on the CPU.
  if (nnodes <= 1 || device == Device::cuda || requested.is_auto()) return;
  const BackendEntry& entry = requested.entry();
  DDPX_REQUIRE(entry.nnodes_refusal.empty(), "--nnodes {} with --device cpu --backend {}: {}", nnodes, entry.name,
               entry.nnodes_refusal);
}

bool needs_mpi_session(const BackendEntry& backend, const WorldInfo& world) {
  return backend.needs_mpi_session || (world.mpi_launched && world.world_size > 1);
}

bool needs_mpi_session(std::string_view backend, const WorldInfo& world) {
  return needs_mpi_session(backend_named(backend), world);
}

std::unique_ptr<Communicator> make_communicator(const BackendEntry& backend, const WorldInfo& world,
                                                std::chrono::milliseconds rendezvous_timeout,
                                                std::chrono::milliseconds collective_timeout) {
  DDPX_REQUIRE(backend.built(), "--backend {} is not available in this build: {} (`ddpx --version` lists the "
               "backends built)", backend.name, backend.not_built);
  return backend.factory(world, rendezvous_timeout, collective_timeout);
}

std::unique_ptr<Communicator> make_communicator(std::string_view backend, const WorldInfo& world,
                                                std::chrono::milliseconds rendezvous_timeout,
                                                std::chrono::milliseconds collective_timeout) {
  return make_communicator(backend_named(backend), world, rendezvous_timeout, collective_timeout);
}

std::string built_backends_line() {
  std::string cpu, cuda_only, missing;
  const auto append = [](std::string& list, std::string_view name) {
    list += (list.empty() ? "" : ", ") + std::string(name);
  };
  for (const BackendEntry& entry : communication_backends()) {
    if (!entry.built()) append(missing, entry.name);
    else if (entry.serves_cpu) append(cpu, entry.name);
    else append(cuda_only, entry.name);
  }
  std::string line = "backends: " + (cpu.empty() ? std::string("none for cpu") : cpu);
  if (!cuda_only.empty()) line += "; " + cuda_only + " with --device cuda";
  if (!missing.empty()) line += " (not built: " + missing + ")";
  return line;
}

}  // namespace ddpx
