// PeakTable: the measured peak bus bandwidth by message size of one collective, world size and link (what
// `ddpx allreduce --json` writes and nccl-tests' logs give), and the collectives' names. Its own header so the
// readers of each format (comm_stats.hpp's load_peak_table, nccl_tests_log.hpp) share it without including each
// other.
// Guarantees: a PeakTable's points are sorted by size, each with bytes > 0 and busbw > 0, one per size;
// busbw_at() interpolates linearly in log2(size) between measured sizes and clamps outside them;
// parse_collective() accepts nccl-tests' names (and their spellings without '_') and names the value otherwise.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ddpx {

enum class Collective { all_reduce, broadcast, all_gather, reduce_scatter };

// Accepts "all_reduce", "broadcast", "all_gather", "reduce_scatter" (and "allreduce", "allgather",
// "reducescatter"); the error names the value and lists these.
Collective parse_collective(std::string_view name);
std::string_view collective_name(Collective collective);

struct PeakPoint {
  int64_t bytes = 0;
  double busbw_GBps = 0;
  bool operator==(const PeakPoint&) const = default;
};

// Measured peak bus bandwidth by message size, for one collective, world size and link.
class PeakTable {
 public:
  PeakTable() = default;
  // Sorts points by size; throws ddpx::Error on a non-positive size or bandwidth, or two points of one size.
  PeakTable(std::vector<PeakPoint> points, Collective collective = Collective::all_reduce, int world = 0,
            std::string link = "");

  bool empty() const { return points_.empty(); }
  const std::vector<PeakPoint>& points() const { return points_; }
  Collective collective() const { return collective_; }
  int world() const { return world_; }
  const std::string& link() const { return link_; }
  // Interpolated peak busbw (GB/s) at this size; throws ddpx::Error when the table is empty.
  double busbw_at(int64_t bytes) const;

 private:
  std::vector<PeakPoint> points_;
  Collective collective_ = Collective::all_reduce;
  int world_ = 0;
  std::string link_;
};

// {"collective": "all_reduce", "world": 2, "link": "NV18", "points": [{"bytes": 1048576, "busbw_GBps": 20.1}, ...]}
void to_json(nlohmann::json& j, const PeakTable& table);
void from_json(const nlohmann::json& j, PeakTable& table);

}  // namespace ddpx
