// `ddpx topo`: the GPU and NIC link matrix (nvidia-smi topo -m notation) from NVML loaded at run time and sysfs
// (NICs and their PCI relationship to each GPU), CPU affinity, NUMA affinity and GPU NUMA ID,
// peer access as the CUDA runtime reports it, and the NCCL transport predicted for every GPU pair; with
// --nccl-log, also the transport an NCCL_DEBUG=INFO run actually used.
// Exit status: 0 when the table was printed, and also 0 on a machine without NVML or GPUs (then one line says
// why: "no GPU topology here" is an answer, not a failure); 2 when --json was asked for and there is no table to
// write, or a file cannot be read or written. Never crashes for a missing driver.
#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/cuda_devices.hpp"
#include "core/error.hpp"
#include "io/output_file.hpp"
#include "io/same_file.hpp"
#include "topology/nccl_transport.hpp"
#include "topology/nic_topology.hpp"
#include "topology/nvml_topology.hpp"
#include "topology/topology.hpp"

namespace ddpx::cli {
namespace {

struct TopoFlags {
  std::string json_out, from_json, nccl_log;
  bool p2p_disabled = false;
};

// The CUDA runtime's peer access between the GPUs it shows, labelled with their NVML index.
std::string format_peer_access(const TopologyTable& table) {
  const std::vector<std::string> bus_ids = visible_gpu_bus_ids();
  if (bus_ids.empty()) return "";
  const std::vector<std::vector<bool>> can = visible_gpu_peer_access();
  std::string out = "# Peer access (cudaDeviceCanAccessPeer; CUDA device order, NVML index in brackets)\n";
  out += fmt::format("{:<12}", "");
  for (size_t j = 0; j < bus_ids.size(); ++j) out += fmt::format("{:>6}", fmt::format("cuda{}", j));
  out += "\n";
  for (size_t i = 0; i < bus_ids.size(); ++i) {
    const int nvml = topology_index_of(table, bus_ids[i]);
    out += fmt::format("{:<12}", fmt::format("cuda{} [{}]", i, nvml >= 0 ? std::to_string(nvml) : "?"));
    for (size_t j = 0; j < bus_ids.size(); ++j) out += fmt::format("{:>6}", i == j ? "X" : can[i][j] ? "yes" : "no");
    out += "\n";
  }
  return out;
}

std::string format_nccl_log_summary(const std::string& path) {
  std::ifstream in(path);
  DDPX_REQUIRE(in.good(), "--nccl-log: cannot open '{}' (write one with NCCL_DEBUG=INFO ddpx train ... > FILE 2>&1)",
               path);
  // A log is text of a few MB at most; reading stops at 256 MiB so that a wrong path (a device, a huge binary)
  // cannot take the machine's memory.
  constexpr size_t kMaxLogBytes = size_t{256} << 20;
  std::string text;
  std::vector<char> chunk(size_t{1} << 20);
  while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0) {
    text.append(chunk.data(), static_cast<size_t>(in.gcount()));
    DDPX_REQUIRE(text.size() <= kMaxLogBytes,
                 "--nccl-log {}: larger than 256 MiB; that is not an NCCL_DEBUG=INFO log of one run", path);
  }
  const NcclTransportSummary summary = parse_nccl_transports(text);
  if (summary.connections.empty())
    return fmt::format("# NCCL transport used ({}): no 'Channel .. via ..' lines; was NCCL_DEBUG=INFO set?\n", path);
  std::string counts;
  for (const auto& [family, count] : summary.family_counts)
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", family, count);
  return fmt::format("# NCCL transport used ({}): {} ({} connections: {})\n", path, summary.main_transport,
                     summary.connections.size(), counts);
}

int run_topo(const TopoFlags& flags) {
  const char* env_p2p = std::getenv("NCCL_P2P_DISABLE");
  const bool p2p_disabled = flags.p2p_disabled || (env_p2p && std::string(env_p2p) == "1");
  const std::vector<FileRole> inputs = {{"--from-json", flags.from_json}, {"--nccl-log", flags.nccl_log}};
  const std::vector<FileRole> outputs = {{"--json", flags.json_out}};
  require_distinct_files(inputs, outputs);  // `topo --from-json T --json T` would replace what it reads
  TopologyTable table;
  bool probed = false;
  std::string nic_note;
  if (!flags.from_json.empty()) {
    table = load_topology(flags.from_json);
    fmt::print("# recorded topology: {}\n", flags.from_json);
  } else {
    TopologyProbe probe = probe_topology();
    if (!probe.table || probe.table->gpus.empty()) {
      const std::string why = probe.table ? "NVML answered but reports no GPUs" : probe.message;
      DDPX_REQUIRE(flags.json_out.empty(), "--json {}: there is no GPU topology to write on this machine ({})",
                   flags.json_out, why);
      fmt::print("ddpx topo: no GPU topology on this machine: {}\n"
                 "(`ddpx topo --from-json FILE` prints a table recorded elsewhere with `ddpx topo --json FILE`)\n",
                 why);
      TopologyTable nics_only;
      add_nics(nics_only);
      if (!nics_only.nics.empty()) fmt::print("\n{}", format_topology(nics_only));
      if (!flags.nccl_log.empty()) fmt::print("{}", format_nccl_log_summary(flags.nccl_log));
      return 0;
    }
    table = std::move(*probe.table);
    nic_note = add_nics(table);
    probed = true;
  }
  fmt::print("{}\n", format_topology(table));
  if (!nic_note.empty()) fmt::print("# {}\n\n", nic_note);
  if (probed) {
    const std::string peers = format_peer_access(table);
    if (!peers.empty()) fmt::print("{}\n", peers);
  }
  if (table.gpus.size() > 1) fmt::print("{}", format_transport_prediction(table, p2p_disabled));
  if (!flags.nccl_log.empty()) fmt::print("{}", format_nccl_log_summary(flags.nccl_log));
  if (!flags.json_out.empty()) {
    write_output_text(flags.json_out, "--json", nlohmann::json(table).dump(1) + "\n");
    fmt::print("wrote {}\n", flags.json_out);
  }
  return 0;
}

}  // namespace

Command add_topo_command(CLI::App* cmd) {
  const auto flags = command_flags<TopoFlags>(cmd, HelpDefaults::per_flag);
  cmd->add_option("--json", flags->json_out, "also write the table as JSON (read back with --from-json)");
  cmd->add_option("--from-json", flags->from_json, "print a table recorded with --json instead of probing")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--p2p-disabled", flags->p2p_disabled,
                "predict transports as with NCCL_P2P_DISABLE=1 (also on when that variable is set)");
  cmd->add_option("--nccl-log", flags->nccl_log,
                  "NCCL_DEBUG=INFO output of a run: print the transport NCCL actually used")
      ->check(CLI::ExistingFile);
  return command_running(cmd, flags, run_topo);
}

}  // namespace ddpx::cli
