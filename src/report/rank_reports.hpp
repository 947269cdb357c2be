// What every writer of a run report does the same way: the trainer (train/run_report.cpp) and the LibTorch adapter
// (torch_ddp/ddp_job.cpp) both stamp the build and the start, name the host, and collect every rank's RankRun on
// rank 0 through these, so their reports carry the same fields filled alike.
// Guarantees: stamp_run_start() sets RunConfig's ddpx_version, ddpx_commit and started_utc (ISO 8601 UTC to the
// second, "2026-12-01T09:37:00Z"); host_name() is gethostname's answer ("" when it fails); gather_rank_runs()
// returns every rank's RankRun in rank order through `gather`, an all-gather of one string per rank that the caller
// runs on its communicator under its watchdog (nothing here communicates), or this rank's alone when `gather` is
// empty (a world of one).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "report/step_record.hpp"

namespace ddpx {

void stamp_run_start(RunConfig& config);
std::string host_name();

using StringGather = std::function<std::vector<std::string>(const std::string& mine)>;
std::vector<RankRun> gather_rank_runs(const RankRun& mine, const StringGather& gather);

}  // namespace ddpx
