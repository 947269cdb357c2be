// The shared parts of writing a run report; see rank_reports.hpp.
#include "report/rank_reports.hpp"

#include <unistd.h>

#include <ctime>
#include <nlohmann/json.hpp>

#include "core/build_info.hpp"

namespace ddpx {
namespace {

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32] = {};
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace

void stamp_run_start(RunConfig& config) {
  config.ddpx_version = ddpx_version();
  config.ddpx_commit = ddpx_commit();
  config.started_utc = utc_now_iso8601();
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

std::vector<RankRun> gather_rank_runs(const RankRun& mine, const StringGather& gather) {
  if (!gather) return {mine};
  nlohmann::json json;
  to_json(json, mine);
  std::vector<RankRun> runs;
  for (const std::string& text : gather(json.dump())) {
    RankRun run;
    from_json(nlohmann::json::parse(text), run);
    runs.push_back(std::move(run));
  }
  return runs;
}

}  // namespace ddpx
