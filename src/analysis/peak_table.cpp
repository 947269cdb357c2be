// The peak table and the collectives' names (see peak_table.hpp).
#include "analysis/peak_table.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "report/json_fields.hpp"

namespace ddpx {

using nlohmann::json;

Collective parse_collective(std::string_view name) {
  if (name == "all_reduce" || name == "allreduce") return Collective::all_reduce;
  if (name == "broadcast") return Collective::broadcast;
  if (name == "all_gather" || name == "allgather") return Collective::all_gather;
  if (name == "reduce_scatter" || name == "reducescatter") return Collective::reduce_scatter;
  fail("unknown collective '{}': expected all_reduce, broadcast, all_gather or reduce_scatter", name);
}

std::string_view collective_name(Collective collective) {
  switch (collective) {
    case Collective::all_reduce: return "all_reduce";
    case Collective::broadcast: return "broadcast";
    case Collective::all_gather: return "all_gather";
    case Collective::reduce_scatter: return "reduce_scatter";
  }
  return "unknown";
}

PeakTable::PeakTable(std::vector<PeakPoint> points, Collective collective, int world, std::string link)
    : points_(std::move(points)), collective_(collective), world_(world), link_(std::move(link)) {
  std::sort(points_.begin(), points_.end(), [](const PeakPoint& a, const PeakPoint& b) { return a.bytes < b.bytes; });
  for (size_t i = 0; i < points_.size(); ++i) {
    DDPX_REQUIRE(points_[i].bytes > 0 && points_[i].busbw_GBps > 0,
                 "peak table: every point needs bytes > 0 and busbw_GBps > 0, got {} bytes at {} GB/s",
                 points_[i].bytes, points_[i].busbw_GBps);
    DDPX_REQUIRE(i == 0 || points_[i].bytes != points_[i - 1].bytes,
                 "peak table: two points for {} bytes; keep one measurement per size", points_[i].bytes);
  }
}

double PeakTable::busbw_at(int64_t bytes) const {
  DDPX_REQUIRE(!points_.empty(), "peak table is empty: measure one with `ddpx allreduce`");
  if (bytes <= points_.front().bytes) return points_.front().busbw_GBps;
  if (bytes >= points_.back().bytes) return points_.back().busbw_GBps;
  auto upper = std::lower_bound(points_.begin(), points_.end(), bytes,
                                [](const PeakPoint& p, int64_t size) { return p.bytes < size; });
  auto lower = upper - 1;
  const double x0 = std::log2(static_cast<double>(lower->bytes));
  const double x1 = std::log2(static_cast<double>(upper->bytes));
  const double t = (std::log2(static_cast<double>(bytes)) - x0) / (x1 - x0);
  return lower->busbw_GBps + t * (upper->busbw_GBps - lower->busbw_GBps);
}

void to_json(json& j, const PeakTable& table) {
  json points = json::array();
  for (const PeakPoint& p : table.points()) points.push_back(json{{"bytes", p.bytes}, {"busbw_GBps", p.busbw_GBps}});
  j = json{{"collective", collective_name(table.collective())},
           {"world", table.world()},
           {"link", table.link()},
           {"points", points}};
}

void from_json(const json& j, PeakTable& table) {
  const char* record = "peak table";
  std::string collective = "all_reduce", link;
  int world = 0;
  json points_json;
  json_fields::optional(j, record, "collective", collective);
  json_fields::optional(j, record, "world", world);
  json_fields::optional(j, record, "link", link);
  json_fields::require(j, record, "points", points_json);
  DDPX_REQUIRE(points_json.is_array(), "peak table: 'points' must be an array");
  std::vector<PeakPoint> points;
  for (const json& p : points_json) {
    PeakPoint point;
    json_fields::require(p, "peak table point", "bytes", point.bytes);
    json_fields::require(p, "peak table point", "busbw_GBps", point.busbw_GBps);
    points.push_back(point);
  }
  table = PeakTable(std::move(points), parse_collective(collective), world, link);
}

}  // namespace ddpx
