// Link presets and measured link files (see link_sources.hpp).
#include "predict/link_sources.hpp"

#include <optional>

#include "analysis/nccl_tests_log.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/json_parse.hpp"

namespace ddpx::predict {
namespace {

constexpr const char* kAnchorsShm =
    "docs/anchors.md (../shared): NCCL all-reduce between 2 H200 with NCCL_P2P_DISABLE=1 (SHM transport), "
    "28-29 GB/s bus bandwidth at 16 MB and above";
constexpr const char* kAlayaNvlink =
    "docs.alayanew.com tech blog 'NCCL-tests in practice' (2026-05-06): all_reduce_perf busbw at large sizes, "
    "8x A100 SXM4 NVLink-3 230-250 GB/s, 8x H100 SXM5 NVLink-4 460-480 GB/s";
constexpr const char* kSaturnNdr =
    "saturncloud.io blog 'Validating Multi-Node GPU Clusters with NCCL Tests': L40S over IB NDR (no NVLink), "
    "40-50 GB/s bus bandwidth";
constexpr const char* kNcclModel = "NVIDIA/nccl src/graph/tuning.cc: base and per-hop latencies, LL/tree factors";

LinkLevel ib_ndr_level() { return {"ib-ndr", 45.0, LinkHardware::net, std::nullopt}; }

std::string read_small_file(const std::string& path) {
  struct stat info {};
  DDPX_REQUIRE(::stat(path.c_str(), &info) == 0, "--link {}: no such preset or file (presets: pcie-shm, nvlink3, "
               "nvlink4, ib-ndr; or a file written by `ddpx allreduce --json FILE`)", path);
  DDPX_REQUIRE(S_ISREG(info.st_mode), "--link {}: not a regular file", path);
  DDPX_REQUIRE(info.st_size < (int64_t{64} << 20), "--link {}: {} bytes is too large for a peak table", path,
               static_cast<int64_t>(info.st_size));
  std::ifstream in(path);
  DDPX_REQUIRE(in.good(), "--link {}: cannot open the file", path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

[[noreturn]] void refuse_other_tool(const std::string& path, const std::string& what) {
  fail("--link {}: this is {}, not a link file; measure the link with `ddpx allreduce --nproc-per-node 2 --json "
       "FILE` (add --device cpu for CPU ranks) or name a preset (pcie-shm, nvlink3, nvlink4, ib-ndr)", path, what);
}

void refuse_unless_peak_table(const std::string& path, const std::string& text, const nlohmann::json& j) {
  (void)text;
  if (!j.is_object()) refuse_other_tool(path, "JSON but not an object (a ddpx allreduce peak table is one)");
  if (j.contains("config") && j.contains("ranks")) refuse_other_tool(path, "a run report (ddpx train --report)");
  if (j.value("tool", "") == "ddpx predict") refuse_other_tool(path, "ddpx predict's own output");
  if (j.contains("runs") || (j.contains("rows") && !j.contains("points")))
    refuse_other_tool(path, "a table of another command (ddpx bench's bench.json or similar)");
  if (!j.contains("points"))
    refuse_other_tool(path, "JSON without the 'points' field of a ddpx allreduce peak table (bytes, busbw_GBps)");
}

}  // namespace

std::vector<std::string> link_preset_names() { return {"pcie-shm", "nvlink3", "nvlink4", "ib-ndr"}; }

LinkModel link_preset(std::string_view name) {
  LinkModel link;
  if (name == "pcie-shm") {
    link.intra = {"pcie-shm", 28.0, LinkHardware::pci, std::nullopt};
    link.sources = {kAnchorsShm, kNcclModel};
    link.description = "pcie-shm preset: PCIe GPUs through host shared memory (NCCL SHM), 28 GB/s busbw";
  } else if (name == "nvlink3") {
    link.intra = {"nvlink3", 230.0, LinkHardware::nvlink, std::nullopt};
    link.sources = {kAlayaNvlink, kNcclModel};
    link.description = "nvlink3 preset: A100 SXM4 NVLink 3 with NVSwitch, 230 GB/s busbw";
  } else if (name == "nvlink4") {
    link.intra = {"nvlink4", 460.0, LinkHardware::nvlink, std::nullopt};
    link.sources = {kAlayaNvlink, kNcclModel};
    link.description = "nvlink4 preset: H100 SXM5 NVLink 4 with NVSwitch, 460 GB/s busbw";
  } else if (name == "ib-ndr") {
    link.intra = ib_ndr_level();
    link.network = ib_ndr_level();
    link.ranks_per_node = 1;
    link.sources = {kSaturnNdr, kNcclModel};
    link.description = "ib-ndr preset: one rank per node, InfiniBand NDR 400 Gb/s, 45 GB/s busbw";
    return link;
  } else {
    fail("--link {}: unknown preset; presets are pcie-shm, nvlink3, nvlink4 and ib-ndr (docs/cli.md, ddpx predict, "
         "lists their figures and sources), or give a file written by `ddpx allreduce --json FILE`",
         std::string(name).substr(0, 80));
  }
  link.ranks_per_node = 8;
  return link;
}

LinkLevel network_preset(std::string_view name) {
  DDPX_REQUIRE(name == "ib-ndr", "--network {}: unknown network preset; the one known is ib-ndr (InfiniBand NDR, "
               "one 400 Gb/s NIC per rank)", std::string(name).substr(0, 80));
  return ib_ndr_level();
}

MeasuredCurve fit_measured_curve(const PeakTable& table, int world) {
  DDPX_REQUIRE(world >= 2 && !table.empty(), "peak table: needs 2 or more ranks and at least one point");
  const double factor = 2.0 * (world - 1) / world;
  // Weighted least squares of t = a + c*b with weights 1/t^2: every size counts by its relative error.
  double sw = 0, sb = 0, st = 0, sbb = 0, sbt = 0;
  for (const PeakPoint& p : table.points()) {
    const double b = static_cast<double>(p.bytes);
    const double t = b * factor / (p.busbw_GBps * 1e3);  // us
    const double w = 1.0 / (t * t);
    sw += w, sb += w * b, st += w * t, sbb += w * b * b, sbt += w * b * t;
  }
  const double determinant = sw * sbb - sb * sb;
  double a = 0, c = 0;
  if (table.points().size() >= 2 && determinant > 0) {
    c = (sw * sbt - sb * st) / determinant;
    a = (st - c * sb) / sw;
  }
  if (a < 0 || c <= 0) {  // one point, or a line through the origin fits better: no latency term
    a = 0;
    c = sbt / sbb;
  }
  MeasuredCurve curve;
  curve.world = world;
  curve.table = table;
  curve.hop_latency_us = a / (2.0 * (world - 1));
  curve.peak_busbw_GBps = factor / (c * 1e3);
  return curve;
}

LinkModel load_link_file(const std::string& path) {
  const std::string text = read_small_file(path);
  nlohmann::json j;
  if (std::optional<PeakTable> table = peak_table_from_nccl_tests(text, "--link " + path)) {
    // nccl-tests' own output: the same fit as a ddpx allreduce table.
    LinkModel link;
    link.intra.name = "measured by nccl-tests";
    link.intra.measured = fit_measured_curve(*table, table->world());
    link.intra.busbw_GBps = link.intra.measured->peak_busbw_GBps;
    link.ranks_per_node = table->world();
    link.description = fmt::format("measured: {} (nccl-tests all_reduce_perf, {} ranks, fitted {:.2f} GB/s peak busbw, "
                                   "{:.2f} us per hop)", path, table->world(), link.intra.measured->peak_busbw_GBps,
                                   link.intra.measured->hop_latency_us);
    link.sources = {fmt::format("{} (nccl-tests all_reduce_perf)", path)};
    return link;
  }
  try {
    std::istringstream in(text);
    j = parse_json(in, "the file");
  } catch (const std::exception&) {
    if (text.find("Avg bus bandwidth") != std::string::npos || text.find("avg bus bandwidth") != std::string::npos ||
        text.find("algbw") != std::string::npos)
      refuse_other_tool(path, "an all-reduce table printed as text (nccl-tests or ddpx allreduce without --json)");
    refuse_other_tool(path, "not JSON");
  }
  refuse_unless_peak_table(path, text, j);
  PeakTable table;
  try {
    table = j.get<PeakTable>();
  } catch (const Error& e) {
    fail("--link {}: {}", path, e.what());
  } catch (const nlohmann::json::exception& e) {
    fail("--link {}: not a valid peak table: {}", path, e.what());
  }
  DDPX_REQUIRE(table.collective() == Collective::all_reduce,
               "--link {}: the table measures {}, and DDP's buckets are all-reduced; measure with `ddpx allreduce`",
               path, collective_name(table.collective()));
  DDPX_REQUIRE(table.world() >= 2,
               "--link {}: missing or bad field 'world' ({}): a link is measured among 2 or more ranks "
               "(`ddpx allreduce --nproc-per-node 2 --json FILE`)", path, table.world());
  LinkModel link;
  const std::string measured_link = table.link().empty() ? "unknown link" : table.link();
  link.intra.name = "measured " + measured_link;
  link.intra.measured = fit_measured_curve(table, table.world());
  link.intra.busbw_GBps = link.intra.measured->peak_busbw_GBps;
  link.ranks_per_node = table.world();
  link.device = j.value("device", "");
  link.model = j.value("model", "");
  link.precision = j.value("precision", "");
  const std::string backend = j.value("backend", "");
  link.description = fmt::format("measured: {} ({} ranks, {}{}{}, fitted {:.2f} GB/s peak busbw, {:.2f} us per hop)",
                                 path, table.world(), measured_link, backend.empty() ? "" : ", backend ", backend,
                                 link.intra.measured->peak_busbw_GBps, link.intra.measured->hop_latency_us);
  link.sources = {fmt::format("{} (ddpx allreduce --json)", path)};
  return link;
}

LinkModel resolve_link(const std::string& value) {
  for (const std::string& name : link_preset_names())
    if (value == name) return link_preset(value);
  struct stat info {};
  if (::stat(value.c_str(), &info) != 0) return link_preset(value);  // not a file: the unknown-preset error
  return load_link_file(value);
}

}  // namespace ddpx::predict
