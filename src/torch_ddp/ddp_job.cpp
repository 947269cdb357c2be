// The LibTorch adapter's job verbs over DistJob (no LibTorch here); see ddp_job.hpp.
#include "torch_ddp/ddp_job.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "core/error.hpp"
#include "core/test_fault.hpp"
#include "dist/backend_registry.hpp"
#include "dist/host_collectives.hpp"
#include "dist/watchdog.hpp"
#include "report/rank_reports.hpp"

namespace ddpx::torch {

DistJobOptions ddp_job_options(const std::string& backend, Device device, std::chrono::milliseconds comm_timeout) {
  BackendChoice choice;
  try {
    choice = parse_backend(backend);
    require_serves(choice, device);
  } catch (const Error& e) {
    fail("ddpx::torch::DdpOptions::backend '{}': {}", backend, e.what());
  }
  // A world of one needs no peers: the self backend, unless one was named.
  return {.backend = choice, .device = device, .comm_timeout = comm_timeout, .backend_when_alone = !choice.is_auto()};
}

void require_same_model(DistJob& job, const std::vector<std::string>& model_lines,
                        const std::vector<AgreedSetting>& settings) {
  test_fault_point("agreement");
  // The tensor counts first, so that the table below has the same length on every rank and the first
  // differing tensor can be named even when one rank has more of them.
  std::vector<int64_t> counts(static_cast<size_t>(job.world()));
  const int64_t mine = static_cast<int64_t>(model_lines.size());
  job.run_watched("the model check's tensor counts",
                  [&] { all_gather_host(job.communicator(), &mine, counts.data(), sizeof(int64_t)); });
  const size_t shared = static_cast<size_t>(*std::min_element(counts.begin(), counts.end()));
  std::vector<AgreedSetting> table;
  for (size_t i = 0; i < shared; ++i)
    table.push_back({fmt::format("the model's tensor {} (name [shape] dtype)", i), model_lines[i]});
  table.push_back({"the model's number of tensors", std::to_string(model_lines.size())});
  table.insert(table.end(), settings.begin(), settings.end());
  try {
    job.agree(table);
  } catch (const Error& e) {
    if (job.watchdog().fired()) throw;
    fail("ddpx::torch::DistributedDataParallel: every rank must wrap the same model with the same options: {}; "
         "build the same module (same layers, order and sizes) and pass the same DdpOptions on every rank",
         e.what());
  }
}

void write_report(DistJob& job, Device device, const std::string& path, RunConfig config,
                  const std::vector<StepRecord>& steps) {
  RankRun run;
  run.info.rank = job.rank();
  run.info.world_size = job.world();
  run.info.device_name = device == Device::cuda ? "cuda" : "cpu";
  run.info.precision = "fp32";
  run.info.host = host_name();
  run.info.clock = ClockAlignment{job.clock_offset().offset_ms, job.clock_offset().uncertainty_ms};
  run.steps = steps;
  DDPX_REQUIRE(!steps.empty(), "rank {}: write_report('{}'): no step was recorded after the warm-up steps "
               "(DdpOptions::report_warmup_steps); train more steps before writing the report", job.rank(), path);
  std::vector<RankRun> runs = gather_rank_runs(run, [&](const std::string& mine) { return job.gather_strings(mine); });
  if (!job.lead()) return;
  RunReport report;
  config.world = job.world();
  config.ddp = true;
  stamp_run_start(config);
  report.config = std::move(config);
  report.ranks = std::move(runs);
  save_run_report(report, path);
}

}  // namespace ddpx::torch
