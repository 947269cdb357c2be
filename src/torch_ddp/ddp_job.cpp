// The LibTorch adapter's job: world, communicator, agreement and report (no LibTorch here); see ddp_job.hpp.
#include "torch_ddp/ddp_job.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>

#include "core/error.hpp"
#include "core/test_fault.hpp"
#include "dist/backend_registry.hpp"
#include "dist/bootstrap.hpp"
#include "dist/bootstrap_exchange.hpp"
#include "dist/clock_offset.hpp"
#include "dist/heartbeat.hpp"
#include "dist/gather_strings.hpp"
#include "dist/host_collectives.hpp"
#include "dist/mpi_session.hpp"
#include "dist/watchdog.hpp"
#include "report/rank_reports.hpp"

namespace ddpx::torch {
namespace {

double steady_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

const BackendEntry& backend_for(const DdpJobOptions& options, const WorldInfo& world) {
  // A world of one needs no peers: the self backend, unless one was named.
  if (world.world_size == 1 && options.backend == "auto") return backend_named("self");
  try {
    const BackendEntry& backend = resolve_backend(parse_backend(options.backend), options.device);
    require_serves(BackendChoice(backend), options.device);
    return backend;
  } catch (const Error& e) {
    fail("ddpx::torch::DdpOptions::backend '{}': {}", options.backend, e.what());
  }
}

}  // namespace

DdpJob::DdpJob(const DdpJobOptions& options)
    : device_(options.device), local_start_(std::chrono::steady_clock::now()) {
  const WorldInfo world = detect_world();
  rank_ = world.rank;
  world_ = world.world_size;
  const BackendEntry& backend = backend_for(options, world);
  require_joins_torchrun(backend, world, started_by_torchrun());
  heartbeat_ = std::make_shared<HeartbeatBoard>(
      world_ > 1 ? HeartbeatBoard::job_directory() : std::filesystem::path(), rank_, world_);
  watchdog_ = std::make_unique<CommWatchdog>(rank_, options.comm_timeout, heartbeat_.get());
  test_fault_point("start");
  watchdog_->run_watched("communicator creation (" + std::string(backend.name) + ")", [&] {
    if (needs_mpi_session(backend, world)) {
      mpi_session_ = std::make_shared<MpiSession>();
      mpi_session_->set_finalize_timeout(options.comm_timeout, heartbeat_.get());
    }
    communicator_ = make_communicator(backend, world, options.comm_timeout, options.comm_timeout);
  });
  watchdog_->attach(*communicator_);
  // The run clock: rank 0's start on rank 0's clock, every rank's offset to it (Note [One clock for all ranks]).
  double origin_ms = steady_ms();
  watchdog_->run_watched("the clock offset measurement", [&] {
    const ClockOffset offset = measure_clock_offset(*communicator_, steady_ms);
    clock_ = ClockAlignment{offset.offset_ms, offset.uncertainty_ms};
    broadcast_host(*communicator_, &origin_ms, sizeof(origin_ms), 0);
  });
  local_start_ = std::chrono::steady_clock::time_point(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double, std::milli>(origin_ms - clock_.offset_ms)));
}

DdpJob::~DdpJob() = default;

double DdpJob::now_ms() const {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - local_start_).count();
}

std::vector<std::string> DdpJob::gather_strings(const std::string& mine) {
  std::vector<std::string> result;
  watchdog_->run_watched("a gather of every rank's text",
                         [&] { result = ddpx::gather_strings(*communicator_, mine); });
  return result;
}

void DdpJob::require_same_model(const std::vector<std::string>& model_lines,
                                const std::vector<AgreedSetting>& settings) {
  test_fault_point("agreement");
  // The tensor counts first, so that the table below has the same length on every rank and the first
  // differing tensor can be named even when one rank has more of them.
  std::vector<int64_t> counts(static_cast<size_t>(world_));
  const int64_t mine = static_cast<int64_t>(model_lines.size());
  watchdog_->run_watched("the model check's tensor counts",
                         [&] { all_gather_host(*communicator_, &mine, counts.data(), sizeof(int64_t)); });
  const size_t shared = static_cast<size_t>(*std::min_element(counts.begin(), counts.end()));
  std::vector<AgreedSetting> table;
  for (size_t i = 0; i < shared; ++i)
    table.push_back({fmt::format("the model's tensor {} (name [shape] dtype)", i), model_lines[i]});
  table.push_back({"the model's number of tensors", std::to_string(model_lines.size())});
  table.insert(table.end(), settings.begin(), settings.end());
  try {
    watchdog_->run_watched("the start-up agreement", [&] { require_agreement(*communicator_, table); });
  } catch (const Error& e) {
    if (watchdog_->fired()) throw;
    fail("ddpx::torch::DistributedDataParallel: every rank must wrap the same model with the same options: {}; "
         "build the same module (same layers, order and sizes) and pass the same DdpOptions on every rank",
         e.what());
  }
}

void DdpJob::broadcast_from_rank0(void* data, size_t bytes, const std::string& what) {
  if (world_ == 1) return;
  watchdog_->run_watched("the broadcast of rank 0's " + what,
                         [&] { broadcast_host(*communicator_, data, bytes, 0); });
}

void DdpJob::write_report(const std::string& path, RunConfig config, const std::vector<StepRecord>& steps) {
  RankRun run;
  run.info.rank = rank_;
  run.info.world_size = world_;
  run.info.device_name = device_ == Device::cuda ? "cuda" : "cpu";
  run.info.precision = "fp32";
  run.info.host = host_name();
  run.info.clock = clock_;
  run.steps = steps;
  DDPX_REQUIRE(!steps.empty(), "rank {}: write_report('{}'): no step was recorded after the warm-up steps "
               "(DdpOptions::report_warmup_steps); train more steps before writing the report", rank_, path);
  std::vector<RankRun> runs = gather_rank_runs(run, [&](const std::string& mine) { return gather_strings(mine); });
  if (rank_ != 0) return;
  RunReport report;
  config.world = world_;
  config.ddp = true;
  stamp_run_start(config);
  report.config = std::move(config);
  report.ranks = std::move(runs);
  save_run_report(report, path);
}

}  // namespace ddpx::torch
