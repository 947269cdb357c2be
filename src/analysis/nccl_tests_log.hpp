// nccl-tests' own output as a peak table: the text all_reduce_perf prints and the JSON it writes with -J (format
// version 2), so a cluster's existing nccl-tests logs feed `ddpx report --peak` and `ddpx predict --link`.
// Guarantees: peak_table_from_nccl_tests() returns nullopt for anything that is not nccl-tests output (the caller
// then reads its own format), and for nccl-tests output either a table or a ddpx::Error naming the file and what
// is wrong (another collective than all_reduce_perf, no rows, a row that does not read). The table holds each
// size's in-place busbw (what DDP's buckets do; rows with busbw 0 are skipped), the world size counted from the
// device lines ("#  Rank N ...") or the JSON's "devices", and the link "nccl-tests".
#pragma once
#include <optional>
#include <string>

#include "analysis/peak_table.hpp"

namespace ddpx {

std::optional<PeakTable> peak_table_from_nccl_tests(const std::string& text, const std::string& path);

}  // namespace ddpx
