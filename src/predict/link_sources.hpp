// Where a LinkModel comes from: a named preset (figures and their sources listed in docs/cli.md) or a measured
// `ddpx allreduce --json` peak table.
// Guarantees:
//  - link_preset() knows pcie-shm, nvlink3, nvlink4 and ib-ndr; any other name is an error listing them.
//    network_preset() knows ib-ndr (one NIC per rank).
//  - load_link_file() accepts only a ddpx allreduce peak table of an all-reduce among 2 or more ranks; a file of
//    another tool (nccl-tests' text table, a run report, bench.json, ddpx predict's own JSON, any other JSON) is
//    an error naming the file, saying what it looks like and how to make a link file. The fitted per-hop latency
//    and peak bandwidth of the measured line are in the model (intra.measured).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "predict/link_model.hpp"

namespace ddpx::predict {

std::vector<std::string> link_preset_names();
LinkModel link_preset(std::string_view name);
LinkLevel network_preset(std::string_view name);
LinkModel load_link_file(const std::string& path);
// --link VALUE: a preset name, else a file path (a value that is neither names both possibilities).
LinkModel resolve_link(const std::string& value);
// Fits time = a + bytes * c (weights 1/time^2, a >= 0) to the table's points; returns {alpha_us, peak_busbw_GBps}.
MeasuredCurve fit_measured_curve(const PeakTable& table, int world);

}  // namespace ddpx::predict
