// The registry of communication backends: the one place a backend is described. `--backend`'s parser, its
// --help, the error for an unknown name, `ddpx train`'s device rules, the torchrun refusal, the way
// `--nproc-per-node N` starts local ranks, the --nnodes refusal, `ddpx allreduce`'s library line and
// make_communicator() all read it. Adding a backend is its Communicator class plus one entry in
// communication_backends() (backend_registry.cpp); docs/design.md, "Adding a communication backend".
// Guarantees:
//  - Every entry's name parses back: parse_backend(e.name).entry() is e; "auto" is no entry but the resolution
//    rule below, written once (resolve_backend). An unknown --backend is a ddpx::Error listing backend_choices()
//    ("auto, nccl, mpi, gloo or self"), the table's names in order.
//  - resolve_backend(auto, device): nccl on cuda; on cpu, mpi when an MPI launcher started the process (Open MPI's
//    OMPI_COMM_WORLD_SIZE or PMIX_RANK: started_by_mpi_launcher() in job_environment.hpp) or when Gloo is not
//    built in, else gloo. A named backend resolves to itself.
//  - make_communicator(entry, ...) of a backend this build lacks is a ddpx::Error "--backend X is not available in
//    this build: <how to get it>"; of an entry that is built, the entry's factory (which checks the world it is
//    given). built_backends_line() (`ddpx --version`) says which are built, so scripts and tests can ask.
//  - The launch style: on cuda every backend's local ranks are ddpx's own processes, one per GPU; on the CPU the
//    entry's cpu_launch says (auto starts its ranks under mpirun, where they then resolve to mpi).
#pragma once
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/device.hpp"
#include "dist/bootstrap.hpp"
#include "dist/communicator.hpp"

namespace ddpx {

// How `ddpx ... --device cpu --nproc-per-node N` starts its N local ranks.
enum class LocalLaunch {
  own_processes,  // N processes of ddpx's own launcher (launch/launcher.hpp), torchrun-style variables
  mpirun,         // N ranks under `mpirun -np N` (the ranks then see Open MPI's variables)
};

// world, how long the rendezvous (or the id exchange) waits, how long a collective waits (--comm-timeout).
using BackendFactory = std::unique_ptr<Communicator> (*)(const WorldInfo& world,
                                                         std::chrono::milliseconds rendezvous_timeout,
                                                         std::chrono::milliseconds collective_timeout);

struct BackendEntry {
  std::string_view name;     // "gloo": the --backend spelling, and the built Communicator's backend_name()
  std::string_view summary;  // a few words for --help ("" when the name says enough)
  bool serves_cpu = false;   // host buffers for --device cpu
  bool serves_cuda = false;  // for --device cuda
  std::string_view wrong_device;  // the whole error when --device is one it does not serve
  std::string_view not_built;     // how to get it, after "--backend X is not available in this build: " (factory null)
  bool needs_mpi_session = false;  // MPI must be up (dist/mpi_session.hpp) before the factory runs
  // Empty: it joins ranks that torchrun started. Else why it cannot and what to do instead, after "rank R:
  // torchrun started this rank (world size W), but "; {world} stands for W.
  std::string_view torchrun_refusal;
  LocalLaunch cpu_launch = LocalLaunch::mpirun;  // how --device cpu --nproc-per-node N starts the local ranks
  // Empty: --nnodes works with it on the CPU. Else why not and what to do instead, after "--nnodes N with
  // --device cpu --backend X: ".
  std::string_view nnodes_refusal;
  BackendFactory factory = nullptr;  // null: this ddpx was built without it
  std::string (*library)() = nullptr;  // the library and version it runs on, as `ddpx allreduce`'s header prints

  bool built() const { return factory != nullptr; }
  bool serves(Device device) const { return device == Device::cuda ? serves_cuda : serves_cpu; }
};

// The registry, in the order --help and the errors list the backends.
const std::vector<BackendEntry>& communication_backends();
// The entry named `name`, or null.
const BackendEntry* find_backend(std::string_view name);
// The entry named `name`; an unknown name is an error "unknown communication backend 'X' (--backend): expected
// nccl, mpi, gloo or self".
const BackendEntry& backend_named(std::string_view name);

// What --backend asked for: a registry entry, or auto (resolved once the device and the launcher are known).
class BackendChoice {
 public:
  BackendChoice() = default;  // auto
  explicit BackendChoice(const BackendEntry& entry) : entry_(&entry) {}
  static BackendChoice automatic() { return {}; }
  static BackendChoice named(std::string_view name) { return BackendChoice(backend_named(name)); }

  bool is_auto() const { return entry_ == nullptr; }
  const BackendEntry& entry() const;  // not for auto (an internal error)
  std::string_view name() const { return entry_ ? entry_->name : "auto"; }  // the --backend spelling
  bool is(std::string_view backend) const { return entry_ && entry_->name == backend; }
  bool operator==(const BackendChoice&) const = default;

 private:
  const BackendEntry* entry_ = nullptr;  // into communication_backends(), which lives as long as the program
};

// --backend: "auto" or an entry's name; else "--backend 'X' is not known; choose auto, nccl, mpi, gloo or self".
BackendChoice parse_backend(std::string_view text);
// "auto, nccl, mpi, gloo or self".
std::string backend_choices();
// "backends: mpi, gloo, self; nccl with --device cuda" -- the entries this build has, for `ddpx --version`
// (the CPU ones first, then those that serve only cuda); "(not built: gloo)" ends it when some are missing.
std::string built_backends_line();
// --backend's help: "auto (the rule) | nccl (summary) | ...".
std::string backend_help();

// The rule for auto (see the guarantees above); a named backend is returned as given.
const BackendEntry& resolve_backend(BackendChoice requested, Device device,
                                    const EnvLookup& env = process_environment());
// The entry whose cpu_launch `--nproc-per-node` follows: the choice, or for auto mpi on the CPU (its ranks then
// start under mpirun and resolve to mpi there) and nccl on cuda.
LocalLaunch local_launch(BackendChoice requested, Device device);

// The device rule of `ddpx train`: an error (the entry's wrong_device) when `requested` cannot serve `device`.
void require_serves(BackendChoice requested, Device device);
// An error naming the rank, the world size and what to do when torchrun started this rank of a world of 2+ and
// `backend` cannot join torchrun's ranks.
void require_joins_torchrun(const BackendEntry& backend, const WorldInfo& world, bool torchrun_started);
// An error for `--nnodes N` on the CPU with a backend that cannot span nodes that way.
void require_spans_nnodes(BackendChoice requested, Device device, int nnodes);

// Whether this process must bring up MPI (ddpx::MpiSession) before make_communicator(backend, world): for a
// backend that needs it (mpi), and whenever an MPI launcher started it (so the NCCL id goes over MPI).
bool needs_mpi_session(const BackendEntry& backend, const WorldInfo& world);
bool needs_mpi_session(std::string_view backend, const WorldInfo& world);  // an entry's name

// The entry's factory; a backend this build lacks is the error "--backend X is not available in this build: ...".
// rendezvous_timeout bounds the exchange that connects the ranks; collective_timeout how long a collective waits
// for a peer (--comm-timeout; Gloo keeps it, the others ignore it).
std::unique_ptr<Communicator> make_communicator(const BackendEntry& backend, const WorldInfo& world,
                                                std::chrono::milliseconds rendezvous_timeout =
                                                    std::chrono::seconds(120),
                                                std::chrono::milliseconds collective_timeout =
                                                    std::chrono::seconds(300));
// backend_named(backend) then the above (for tools and tests that hold the name).
std::unique_ptr<Communicator> make_communicator(std::string_view backend, const WorldInfo& world,
                                                std::chrono::milliseconds rendezvous_timeout =
                                                    std::chrono::seconds(120),
                                                std::chrono::milliseconds collective_timeout =
                                                    std::chrono::seconds(300));

}  // namespace ddpx
