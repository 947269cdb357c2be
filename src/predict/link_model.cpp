// All-reduce costs after NCCL's tuning model (see link_model.hpp).
#include "predict/link_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"

namespace ddpx::predict {
namespace {

enum Algorithm { kTree = 0, kRing = 1 };
enum Protocol { kLL = 0, kSimple = 1 };

// NCCL's base latencies (us) per algorithm and protocol, and per-hop latencies per hardware class (tuning.cc;
// LL128 columns left out).
constexpr double kBaseLatencyUs[2][2] = {{6.8, 0.0}, {6.6, 8.4}};
constexpr double kHopLatencyUs[3][2][2] = {
    {{0.6, 28.0}, {0.6, 3.4}},   // NVLink: tree, ring
    {{1.0, 28.0}, {1.0, 5.7}},   // PCI
    {{5.0, 28.0}, {2.7, 14.0}},  // network
};

double hop_us(LinkHardware hardware, Algorithm a, Protocol p) {
  return kHopLatencyUs[static_cast<int>(hardware)][a][p];
}

int log2_floor(int value) {
  int result = 0;
  while (value > 1) value >>= 1, ++result;
  return result;
}

struct Shape {
  int ranks, nodes, per_node;
};

Shape shape_of(const LinkModel& link, int ranks) {
  DDPX_REQUIRE(ranks >= 2, "--ranks {}: an all-reduce needs 2 or more ranks", ranks);
  DDPX_REQUIRE(link.ranks_per_node >= 1, "--ranks-per-node {}: must be 1 or more", link.ranks_per_node);
  if (ranks <= link.ranks_per_node) return {ranks, 1, ranks};
  DDPX_REQUIRE(link.network.has_value(),
               "--ranks {} is beyond one node of link '{}' ({} ranks per node) and no network joins nodes: give "
               "--network ib-ndr (or another network preset), or --ranks-per-node N if one node really holds "
               "{} ranks", ranks, link.intra.name, link.ranks_per_node, ranks);
  DDPX_REQUIRE(ranks % link.ranks_per_node == 0,
               "--ranks {} is not a whole number of nodes of {} ranks (--ranks-per-node): use a multiple of {}",
               ranks, link.ranks_per_node, link.ranks_per_node);
  return {ranks, ranks / link.ranks_per_node, link.ranks_per_node};
}

double ring_factor(int ranks) { return 2.0 * (ranks - 1) / ranks; }

// The measured curve at its own world: bytes * factor / busbw(bytes). Below the smallest measured size, the fitted
// line (latency + bytes / peak), scaled to meet the measurement at that size.
double measured_time_us(const MeasuredCurve& curve, int64_t bytes) {
  const double factor = ring_factor(curve.world);
  auto at_size = [&](int64_t b) { return static_cast<double>(b) * factor / (curve.table.busbw_at(b) * 1e3); };
  const int64_t smallest = curve.table.points().front().bytes;
  if (bytes >= smallest) return at_size(bytes);
  auto fitted = [&](int64_t b) {
    return 2.0 * (curve.world - 1) * curve.hop_latency_us + static_cast<double>(b) * factor /
                                                                (curve.peak_busbw_GBps * 1e3);
  };
  return fitted(bytes) * at_size(smallest) / fitted(smallest);
}

CollectiveCost measured_cost(const LinkModel& link, const Shape& s, int64_t bytes) {
  const MeasuredCurve& curve = *link.intra.measured;
  const double b = static_cast<double>(bytes);
  double bandwidth_GBps = curve.peak_busbw_GBps;
  double latency_us = 0;
  if (s.nodes > 1) {  // ranks beyond one node: the network's hops join the ring
    bandwidth_GBps = std::min(bandwidth_GBps, link.network->busbw_GBps * s.per_node);
    latency_us = kBaseLatencyUs[kRing][kSimple] + 2.0 * (s.ranks - s.nodes) * curve.hop_latency_us +
                 2.0 * (s.nodes - 1) * hop_us(link.network->hardware, kRing, kSimple);
    const double bandwidth_us = b * ring_factor(s.ranks) / (bandwidth_GBps * 1e3);
    return {(latency_us + bandwidth_us) / 1e3, latency_us / 1e3, bandwidth_us / 1e3, "measured", ""};
  }
  const double at_world_us = measured_time_us(curve, bytes);
  const double extra_latency_us = 2.0 * (s.ranks - curve.world) * curve.hop_latency_us;
  const double extra_bandwidth_us = b * (ring_factor(s.ranks) - ring_factor(curve.world)) / (bandwidth_GBps * 1e3);
  const double total_us = std::max(at_world_us + extra_latency_us + extra_bandwidth_us, 1e-3);
  const double model_latency_us = 2.0 * (s.ranks - 1) * curve.hop_latency_us;
  const double latency_part_us = std::min(model_latency_us, total_us);
  return {total_us / 1e3, latency_part_us / 1e3, (total_us - latency_part_us) / 1e3, "measured", ""};
}

}  // namespace

int max_ranks(const LinkModel& link) { return link.network ? 1024 : std::min(link.ranks_per_node, 1024); }

CollectiveCost allreduce_cost(const LinkModel& link, int ranks, int64_t bytes) {
  const Shape s = shape_of(link, ranks);
  if (bytes <= 0) return {0, 0, 0, "none", ""};
  if (link.intra.measured) return measured_cost(link, s, bytes);
  double bus_GBps = link.intra.busbw_GBps;
  if (s.nodes > 1) bus_GBps = std::min(bus_GBps, link.network->busbw_GBps * s.per_node);
  DDPX_REQUIRE(bus_GBps > 0, "link '{}': bus bandwidth must be positive", link.intra.name);
  const LinkHardware intra_hw = link.intra.hardware;
  const LinkHardware net_hw = link.network ? link.network->hardware : LinkHardware::net;
  CollectiveCost best;
  best.ms = std::numeric_limits<double>::infinity();
  for (Algorithm a : {kRing, kTree}) {
    for (Protocol p : {kLL, kSimple}) {
      double bw = bus_GBps;
      if (a == kRing && p == kLL) bw *= 0.25;
      if (a == kTree) bw *= 0.9;
      if (a == kTree && p == kLL) bw /= 3.8;
      const double algbw = a == kRing ? bw * s.ranks / (2.0 * (s.ranks - 1)) : bw * 0.5;
      double intra_hop = hop_us(intra_hw, a, p);
      if (s.nodes > 1 && p == kLL) intra_hop *= 1.8;
      const double net_hop = hop_us(net_hw, a, p);
      double latency_us = kBaseLatencyUs[a][p];
      if (a == kRing) {
        const int steps = 2 * (s.ranks - 1), net_steps = 2 * (s.nodes - 1);
        latency_us += (steps - net_steps) * intra_hop + net_steps * net_hop;
        // NCCL's "plateau effect of ring": large multi-node Simple all-reduces pay 1.9x the latency.
        if (p == kSimple && s.nodes > 1 && static_cast<double>(bytes) >= s.ranks / 16.0 * 65536) latency_us *= 1.9;
      } else {
        latency_us += 2.0 * ((s.per_node - 1) * intra_hop + log2_floor(s.nodes) * net_hop);
      }
      const double bandwidth_us = static_cast<double>(bytes) / (1e3 * algbw);
      const double ms = (latency_us + bandwidth_us) / 1e3;
      if (ms < best.ms)
        best = {ms, latency_us / 1e3, bandwidth_us / 1e3, a == kRing ? "ring" : "tree", p == kLL ? "LL" : "Simple"};
    }
  }
  return best;
}

}  // namespace ddpx::predict
