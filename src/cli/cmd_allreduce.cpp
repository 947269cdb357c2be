// `ddpx allreduce`: an all-reduce table in nccl-tests' all_reduce_perf format (cli/nccl_tests_format.hpp: header,
// device lines, out-of-place and in-place columns, footer) over NCCL on GPUs or MPI on CPUs, and the same
// measurements as a peak table (analysis/comm_stats.hpp's PeakTable JSON, from the in-place column, which is what
// the reducer's buckets do) that `ddpx train` reports compare their buckets with.
// Every rank measures; rank 0 prints and writes the JSON. A row's time is the mean over ranks (nccl-tests' -a 1)
// unless --average says otherwise. With --nproc-per-node N it starts N workers the way
// `ddpx train` does (GPUs: N local processes; CPU: under mpirun). Exit status 2 when any element came out wrong.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <unistd.h>
#include <fstream>
#include <memory>

#include "cli/arg_lists.hpp"
#include "cli/collective_bench.hpp"
#include "cli/commands.hpp"
#include "cli/cuda_devices.hpp"
#include "cli/launch.hpp"
#include "cli/nccl_tests_format.hpp"
#include "core/error.hpp"
#include "io/output_file.hpp"
#include "dist/backend_registry.hpp"
#include "dist/bootstrap.hpp"
#include "dist/gpu_selection.hpp"
#include "dist/job.hpp"
#include "train/run_modes.hpp"
#include "analysis/comm_stats.hpp"
#include "topology/nccl_transport.hpp"
#include "topology/nvml_topology.hpp"

namespace ddpx::cli {
namespace {

struct AllreduceFlags {
  int nproc = 0;
  std::string sizes;  // "" = device default
  std::string dtype = "f32";
  int iters = 20;
  int warmup = 5;
  int average = 1;  // nccl-tests' -a
  std::string device = "cuda";
  std::string json_out;
  int ranks_per_gpu = 0;  // 0: one rank per GPU
  NodeFlags nodes;
  // nccl-tests' own spellings of the sweep (-b MIN -e MAX -f FACTOR) and of the correctness check (-c 0|1)
  std::string min_bytes, max_bytes;
  int step_factor = 0;
  int check = 1;
  double comm_timeout_s = 300;  // --comm-timeout: every collective's bound
};

// The sweep: --sizes, or nccl-tests' -b/-e/-f (missing ends default to the other end, the factor to 2, as in
// all_reduce_perf), never both.
std::string size_sweep(const AllreduceFlags& f, bool on_gpus) {
  const bool nccl_style = !f.min_bytes.empty() || !f.max_bytes.empty() || f.step_factor != 0;
  DDPX_REQUIRE(!nccl_style || f.sizes.empty(),
               "--sizes {} and -b/-e/-f both give the sizes: use one (-b 8 -e 1G -f 2 is --sizes 8:1G:2)", f.sizes);
  if (!nccl_style) return f.sizes.empty() ? (on_gpus ? "1K:1G" : "1K:16M") : f.sizes;
  DDPX_REQUIRE(f.step_factor == 0 || f.step_factor >= 2, "-f {}: the step factor must be 2 or more", f.step_factor);
  const std::string min = f.min_bytes.empty() ? f.max_bytes : f.min_bytes;
  const std::string max = f.max_bytes.empty() ? f.min_bytes : f.max_bytes;
  DDPX_REQUIRE(!min.empty(), "-f {} needs -b MIN and/or -e MAX", f.step_factor);
  if (parse_byte_size(min, "-b") == parse_byte_size(max, "-e")) return min;
  return fmt::format("{}:{}:{}", min, max, f.step_factor == 0 ? 2 : f.step_factor);
}

struct DtypeChoice {
  CommDType dtype;
  const char* type_name;  // nccl-tests' word
};

DtypeChoice parse_dtype(const std::string& name) {
  if (name == "f32" || name == "fp32" || name == "float") return {CommDType::f32, "float"};
  if (name == "bf16" || name == "bfloat16") return {CommDType::bf16, "bfloat16"};
  if (name == "f16" || name == "fp16" || name == "half") return {CommDType::f16, "half"};
  fail("--dtype {}: expected f32, bf16 or f16", name);
}

// The link the ranks' GPUs share ("NV18"; several differing links joined with '/'), and NCCL's predicted transport;
// the link is "SHM" when NCCL goes through host memory (the name the recorded peak tables use). Empty when NVML or
// the bus ids are unavailable.
std::pair<std::string, std::string> gpu_link(int world) {
  TopologyProbe probe = probe_topology();
  const std::vector<std::string> bus_ids = visible_gpu_bus_ids();
  if (!probe.table || world < 2 || static_cast<int>(bus_ids.size()) < world) return {"", ""};
  const char* env_p2p = std::getenv("NCCL_P2P_DISABLE");
  const bool p2p_disabled = env_p2p && std::string(env_p2p) == "1";
  std::vector<std::string> links, transports;
  for (int i = 0; i < world; ++i)
    for (int j = i + 1; j < world; ++j) {
      const int a = topology_index_of(*probe.table, bus_ids[i]), b = topology_index_of(*probe.table, bus_ids[j]);
      if (a < 0 || b < 0) return {"", ""};
      const std::string link = probe.table->links[a][b];
      const std::string transport = predict_nccl_transport(link, p2p_disabled);
      const std::string shown = transport == "SHM" ? "SHM" : link;
      if (std::find(links.begin(), links.end(), shown) == links.end()) links.push_back(shown);
      if (std::find(transports.begin(), transports.end(), transport) == transports.end())
        transports.push_back(transport);
    }
  auto join = [](const std::vector<std::string>& items) {
    std::string out;
    for (const std::string& item : items) out += (out.empty() ? "" : "/") + item;
    return out;
  };
  return {join(links), join(transports)};
}

int run_allreduce(const AllreduceFlags& f) {
  DDPX_REQUIRE(f.device == "cuda" || f.device == "cpu", "--device {}: expected cuda (NCCL) or cpu (MPI)", f.device);
  const Device device = parse_device(f.device);  // the one reading of --device; compared as a Device below
  const bool on_gpus = device == Device::cuda;
  DDPX_REQUIRE(f.ranks_per_gpu >= 0, "--ranks-per-gpu {}: must be 1 or more", f.ranks_per_gpu);
  DDPX_REQUIRE(f.ranks_per_gpu <= 1 || on_gpus, "--ranks-per-gpu {} applies to --device cuda",
               f.ranks_per_gpu);
  const DtypeChoice dtype = parse_dtype(f.dtype);
  DDPX_REQUIRE(std::isfinite(f.comm_timeout_s) && f.comm_timeout_s >= 0.001 && f.comm_timeout_s <= 1e7,
               "--comm-timeout must be between 0.001 and 1e7 seconds, got {}", f.comm_timeout_s);
  DDPX_REQUIRE(f.iters >= 1, "--iters {}: at least 1 timed iteration is needed", f.iters);
  DDPX_REQUIRE(f.warmup >= 0, "--warmup {}: must be 0 or more", f.warmup);
  const RankTimeAggregate aggregate = parse_rank_time_aggregate(f.average);
  DDPX_REQUIRE(f.check == 0 || f.check == 1, "-c {}: expected 0 or 1 (ddpx checks every result either way)", f.check);
  const std::vector<int64_t> sizes = parse_size_sweep(size_sweep(f, on_gpus), "--sizes");
  const size_t element = comm_dtype_size(dtype.dtype);
  DDPX_REQUIRE(sizes.front() >= static_cast<int64_t>(element), "--sizes: {} bytes is smaller than one {} element",
               sizes.front(), f.dtype);
  const std::string one_rank_json = fmt::format(
      "--json {}: a peak table needs at least 2 ranks (busbw is 0 by definition on one); add --nproc-per-node 2",
      f.json_out);
  if (!f.json_out.empty() && !running_as_worker()) {  // before any rank starts: a late failure strands the others
    DDPX_REQUIRE(f.nproc > 1, "{}", one_rank_json);
    (void)check_output_path(f.json_out, "--json");
  }
  if (on_gpus && !running_as_worker()) {
    const int gpus = visible_gpu_count();
    DDPX_REQUIRE(gpus > 0, "--device cuda: no GPU is visible here; measure MPI between CPU ranks with --device cpu");
    const int ranks_per_gpu = std::max(1, f.ranks_per_gpu);
    DDPX_REQUIRE(f.nproc <= gpus * ranks_per_gpu, "--nproc-per-node {}: only {} GPU(s) visible here; NCCL needs one "
                 "GPU per rank{} (use --device cpu to measure MPI, or --ranks-per-gpu K with NCCL 2.30+)", f.nproc,
                 gpus, ranks_per_gpu > 1 ? fmt::format(" or one per {} ranks", ranks_per_gpu) : "");
  }
  DDPX_REQUIRE(f.nodes.nnodes <= 1 || on_gpus,
               "--nnodes {} with --device cpu: ddpx allreduce measures CPUs over MPI, which spans nodes through "
               "mpirun (`mpirun -H host1:G,host2:G -np N ddpx allreduce --device cpu`, without --nnodes)",
               f.nodes.nnodes);
  if (start_workers_here(f.nproc, f.nodes)) {
    return launch_workers(f.nproc, LaunchTarget{.device = device}, f.nodes);
  }

  // allreduce's own choice (it measures NCCL between GPUs, even on one, and MPI between CPU ranks; one CPU rank
  // talks to itself); the rest is the job's (dist/job.hpp), every collective under its watchdog.
  const BackendEntry& backend = backend_named(on_gpus ? "nccl" : "mpi");
  DDPX_REQUIRE(on_gpus || !running_as_worker() || backend.built(),
               "--device cpu with several ranks needs MPI, and this ddpx was built without it");
  DistJob job({.backend = BackendChoice(backend),
               .device = device,
               .ranks_per_gpu = f.ranks_per_gpu,
               .comm_timeout = std::chrono::milliseconds(static_cast<int64_t>(f.comm_timeout_s * 1000)),
               .backend_when_alone = on_gpus});
  DDPX_REQUIRE(f.json_out.empty() || job.world() > 1, "{}", one_rank_json);
  Communicator* const comm = &job.communicator();
  const bool lead = job.lead();
  std::pair<std::string, std::string> link_transport;  // rank 0 only: it alone prints and writes
  if (lead && comm->size() > 1) link_transport = on_gpus ? gpu_link(comm->size()) : std::pair{"MPI", "MPI"};
  const auto& [link, transport] = link_transport;

  AllreduceBench bench(*comm, static_cast<size_t>(sizes.back() / element * element));
  NcclTestsRunInfo run;
  run.sizes = sizes;
  run.warmup = f.warmup;
  run.iters = f.iters;
  run.aggregate = aggregate;
  run.library = backend_named(comm->backend_name()).library();  // "NCCL 2.x (nccl-library=...)", MPI's, or self's
  {  // every rank's device line, gathered to all (a collective: every rank takes part)
    const BenchDevice device = bench.device();
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    NcclTestsRankDevice mine{comm->rank(), static_cast<int>(getpid()), host, device.index, device.bus_id, device.name};
    std::vector<std::string> lines;
    job.run_watched("the gather of every rank's device line",
                    [&] { lines = bench.gather_text(format_nccl_tests_device_line(mine)); });
    if (!link.empty() && on_gpus) run.link = fmt::format("{} (NCCL transport predicted: {})", link, transport);
    if (lead) fmt::print("{}", format_nccl_tests_header(run, lines)), std::fflush(stdout);
  }
  std::vector<PeakPoint> points;
  std::vector<NcclTestsRow> table;
  nlohmann::json rows = nlohmann::json::array();
  int64_t wrong_total = 0;
  for (int64_t size : sizes) {
    const size_t count = static_cast<size_t>(size) / element;
    const int64_t bytes = static_cast<int64_t>(count * element);
    NcclTestsRow row;
    row.bytes = bytes;
    row.count = static_cast<int64_t>(count);
    row.type = dtype.type_name;
    for (const bool in_place : {false, true}) {
      CollectiveTiming t;
      job.run_watched(fmt::format("the {} all-reduces of {} bytes{}", f.warmup + f.iters, bytes,
                                  in_place ? " (in place)" : ""),
                      [&] { t = bench.measure(count, dtype.dtype, f.warmup, f.iters, in_place); });
      const double time_ms = aggregate_rank_times(t.rank_time_ms, aggregate);
      NcclTestsMeasurement& m = in_place ? row.in_place : row.out_of_place;
      m = {time_ms * 1e3, algbw_GBps(bytes, time_ms), busbw_GBps(Collective::all_reduce, comm->size(), bytes, time_ms),
           t.wrong};
      wrong_total += t.wrong;
    }
    table.push_back(row);
    if (row.in_place.busbw_GBps > 0) points.push_back({bytes, row.in_place.busbw_GBps});
    rows.push_back({{"bytes", bytes}, {"count", count}, {"type", f.dtype}, {"redop", row.redop}, {"root", row.root},
                    {"time_us", row.in_place.time_us}, {"algbw_GBps", row.in_place.algbw_GBps},
                    {"busbw_GBps", row.in_place.busbw_GBps}, {"wrong", row.in_place.wrong},
                    {"out_of_place", {{"time_us", row.out_of_place.time_us},
                                      {"algbw_GBps", row.out_of_place.algbw_GBps},
                                      {"busbw_GBps", row.out_of_place.busbw_GBps},
                                      {"wrong", row.out_of_place.wrong}}}});
    if (lead) fmt::print("{}", format_nccl_tests_row(row)), std::fflush(stdout);
  }
  if (lead) {
    fmt::print("{}", format_nccl_tests_footer(run, table));
    if (comm->size() == 1)
      fmt::print("# one rank: nothing crosses a link, so busbw is 0 by definition; use --nproc-per-node 2 or more\n");
  }
  DDPX_REQUIRE(wrong_total == 0, "all-reduce results were wrong in {} element(s) ({} over {} ranks): the {} backend "
               "or the link is faulty", wrong_total, f.dtype, comm->size(), comm->backend_name());
  if (lead && !f.json_out.empty()) {
    DDPX_REQUIRE(!points.empty(), "--json {}: no size gave a positive bus bandwidth (timer did not tick?); use "
                 "larger --sizes or more --iters", f.json_out);
    nlohmann::json j = PeakTable(points, Collective::all_reduce, comm->size(), link);
    j["dtype"] = f.dtype;
    j["device"] = f.device;
    j["backend"] = comm->backend_name();
    j["transport_predicted"] = transport;
    j["iters"] = f.iters;
    j["warmup"] = f.warmup;
    j["time_over_ranks"] = rank_time_aggregate_name(aggregate);
    j["rows"] = rows;
    write_output_text(f.json_out, "--json", j.dump(1) + "\n");
    // A comment line, like everything after the footer: parsers of nccl-tests' output stop at none.
    fmt::print("# wrote {} (peak table for ddpx report --peak and ddpx predict --link)\n", f.json_out);
  }
  return 0;
}

}  // namespace

Command add_allreduce_command(CLI::App* cmd) {
  const auto f = command_flags<AllreduceFlags>(cmd, HelpDefaults::shown);
  cmd->add_option("--nproc-per-node,--nproc_per_node", f->nproc, "start this many ranks on this node (GPUs: one per GPU; CPU: mpirun)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--sizes", f->sizes,
                  "MIN:MAX (doubling), MIN:MAX:FACTOR or a list (4K,1M,256M); default 1K:1G on cuda, 1K:16M on cpu");
  cmd->add_option("-b,--minbytes", f->min_bytes, "nccl-tests' spelling: smallest size (with -e and -f, instead of --sizes)");
  cmd->add_option("-e,--maxbytes", f->max_bytes, "nccl-tests' spelling: largest size");
  cmd->add_option("-f,--stepfactor", f->step_factor, "nccl-tests' spelling: size multiplier between rows (default 2)");
  cmd->add_option("-d,--dtype,--datatype", f->dtype, "f32 | bf16 | f16 (nccl-tests' float, bfloat16, half too)");
  cmd->add_option("-n,--iters", f->iters, "timed all-reduces per size");
  cmd->add_option("-w,--warmup,--warmup_iters", f->warmup, "untimed all-reduces per size before timing");
  cmd->add_option("-c,--check", f->check, "nccl-tests' correctness check, 0 or 1: ddpx checks every result either way");
  cmd->add_option("--average,-a", f->average,
                  "a row's time over the ranks, as nccl-tests' -a: 0 rank 0's, 1 the mean, 2 the fastest, 3 the slowest");
  cmd->add_option("--device", f->device, "cuda (NCCL) | cpu (MPI)");
  cmd->add_option("--json", f->json_out, "write the measurements as a peak table (JSON) for run reports");
  cmd->add_option("--ranks-per-gpu", f->ranks_per_gpu,
                  "K ranks share each GPU (device = local rank / K; needs NCCL 2.30+); default one rank per GPU");
  cmd->add_option("--comm-timeout", f->comm_timeout_s,
                  "seconds any collective may wait for a peer; a dead or stalled rank is then named and the job "
                  "ends (as ddpx train's)");
  add_node_flags(cmd, f->nodes, "Several nodes");
  return command_running(cmd, f, run_allreduce);
}

}  // namespace ddpx::cli
