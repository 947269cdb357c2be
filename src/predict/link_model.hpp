// LinkModel: what one all-reduce of B bytes among N ranks costs, as NCCL's own tuning model prices it
// (NVIDIA/nccl src/graph/tuning.cc: ncclTopoTuneModel and ncclTopoGetAlgoTime; see docs/design.md "ddpx predict").
// Guarantees:
//  - Ring and tree, each with the LL and Simple protocols; the cheapest of the four is taken, as NCCL's
//    tuner does. Time = latency + bytes / algorithm bandwidth, with
//      ring: algbw = busbw * N / (2(N-1)), latency = base + (2(N-1) - 2(nodes-1)) * intra hop + 2(nodes-1) * net hop
//      tree: algbw = busbw * 0.9 / 2,      latency = base + 2((ranks per node - 1) * intra hop + log2(nodes) * net hop)
//    LL moves 4 useful bytes in 8 (ring: a quarter of the bandwidth, tree: 1/3.8, as NCCL). Base and per-hop
//    latencies are NCCL's tables for the hardware class of each level (NVLink, PCI, network). LL128 is left out
//    (NCCL enables it only on some GPU and link combinations).
//  - Across nodes the bus bandwidth is min(intra-node busbw, ranks per node * network busbw per NIC): one NIC
//    per rank (rail-optimized nodes, as DGX machines are built).
//  - A measured level (a `ddpx allreduce --json` table of W ranks) prices N = W exactly as measured (bus bandwidth
//    interpolated in log2 size; below the smallest measured size, the fitted line scaled to meet it there); other N add the
//    fitted per-hop latency 2(N-W)*alpha and the bandwidth term bytes*(2(N-1)/N - 2(W-1)/W)/busbw_peak.
//  - Every cost is finite and positive for bytes > 0 and 2 <= N; bytes == 0 costs nothing (no call is made).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/comm_stats.hpp"

namespace ddpx::predict {

enum class LinkHardware { nvlink, pci, net };  // NCCL's latency classes

struct MeasuredCurve {
  int world = 2;                  // ranks of the measurement
  PeakTable table;                // size -> busbw at that world
  double hop_latency_us = 0;      // alpha, fitted: time = 2(W-1)*alpha + bytes*2(W-1)/W / busbw_peak
  double peak_busbw_GBps = 0;     // the fitted bandwidth of that line
};

struct LinkLevel {
  std::string name;               // "nvlink4", "MPI", ...
  double busbw_GBps = 0;          // nccl-tests' bus bandwidth at large sizes (per NIC for a network)
  LinkHardware hardware = LinkHardware::pci;
  std::optional<MeasuredCurve> measured;  // set when the level comes from a measured table
};

struct LinkModel {
  std::string description;          // what the table's header names
  LinkLevel intra;                  // between the ranks of one node
  std::optional<LinkLevel> network; // between nodes; absent: one node only
  int ranks_per_node = 8;           // N above this needs a network
  std::vector<std::string> sources; // where the figures come from (docs/cli.md lists them)
  std::string model, precision;     // what a link file says it was measured for ("" = not stated)
  std::string device;               // "cpu" / "cuda" from a link file, "" for presets
};

struct CollectiveCost {
  double ms = 0;
  double latency_ms = 0;    // the latency part of ms
  double bandwidth_ms = 0;  // the bytes / bandwidth part
  std::string algorithm;    // "ring", "tree" or "measured"
  std::string protocol;     // "LL", "Simple" or "" (measured)
};

// Cost of one all-reduce of `bytes` among `ranks` ranks. Throws ddpx::Error when ranks < 2, or when ranks exceed
// ranks_per_node without a network (the message names --ranks, --ranks-per-node and --network).
CollectiveCost allreduce_cost(const LinkModel& link, int ranks, int64_t bytes);

// Largest N the link can price: ranks_per_node without a network, else 1024 (ddpx predict's ceiling).
int max_ranks(const LinkModel& link);

}  // namespace ddpx::predict
