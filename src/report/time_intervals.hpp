// Time intervals on one clock, and the overlap arithmetic that "exposed communication" is defined by.
// Guarantees:
//  - An interval is [begin, end) in milliseconds; one with end <= begin is empty and contributes nothing.
//  - union_of() returns disjoint, non-touching intervals sorted by begin whose total length is the length of the
//    union of its input (overlapping and touching intervals are merged), for any input order.
//  - For any comm and compute sets: uncovered_ms(comm, compute) + covered_ms(comm, compute) == union_ms(comm)
//    (up to rounding of the sums), both are >= 0, and neither depends on the order of either set.
//  - Exposed communication (docs/cli.md, "Exposed communication") is uncovered_ms(communication, compute):
//    communication time during which no compute interval runs, as torchtitan's overlap analyzer defines it.
//    Hidden communication is covered_ms(): the part that ran under compute.
// Plain arithmetic: no clocks, no I/O; analysis/ and the trainer both use it.
#pragma once
#include <vector>

namespace ddpx {

struct TimeInterval {
  double begin_ms = 0;
  double end_ms = 0;
  double length_ms() const { return end_ms > begin_ms ? end_ms - begin_ms : 0; }
  bool operator==(const TimeInterval&) const = default;
};

// The union as disjoint intervals in time order (empty ones dropped).
std::vector<TimeInterval> union_of(std::vector<TimeInterval> intervals);
// Length of the union.
double union_ms(const std::vector<TimeInterval>& intervals);
// Length of union(comm) minus union(compute): communication time not covered by any compute interval.
double uncovered_ms(const std::vector<TimeInterval>& comm, const std::vector<TimeInterval>& compute);
// Length of union(comm) intersected with union(compute): communication time hidden under compute.
double covered_ms(const std::vector<TimeInterval>& comm, const std::vector<TimeInterval>& compute);

}  // namespace ddpx
