// Plain records of what one training step cost, filled by the trainer and read by every analysis in profile/.
// Guarantees:
//  - Only plain data: nothing here depends on dist/, ddp/ or CUDA. The trainer measures (CUDA events, host
//    clocks) and copies the numbers in; profile/ never measures anything itself.
//  - All times are milliseconds. Phase times are durations on the step's critical path; bucket times are
//    offsets from the step's start (the same clock as StepRecord::start_ms, which counts from the rank's run
//    start), so a step's buckets and phases can be drawn on one timeline.
//  - Every struct converts to and from JSON (nlohmann); reading names the missing or mistyped field, and refuses
//    a time that is not finite or lies beyond 10^12 ms (31 years), so every time fits a trace's int64 nanoseconds.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ddpx {

// Where one step's time went. The serial parts (data_wait, h2d_copy, forward, backward, exposed_comm,
// optimizer) add up to total within a few percent; comm overlaps backward and is not one of them.
struct PhaseTimes {
  double data_wait_ms = 0;     // host waited for the loader to hand over the next batch
  double h2d_copy_ms = 0;      // compute stream waited for the host-to-device copy (the part not hidden)
  double forward_ms = 0;       // forward pass and loss
  double backward_ms = 0;      // backward compute, start to the last gradient kernel
  double comm_ms = 0;          // first bucket launch to last bucket completion (overlapped part included)
  double exposed_comm_ms = 0;  // comm not hidden under backward: see exposed_comm_ms() below
  double optimizer_ms = 0;     // zeroing the gradients, the optimizer update (and bf16 weight copy)
  double total_ms = 0;         // the whole step, wall clock

  // data_wait + h2d_copy + forward + backward + exposed_comm + optimizer.
  double serial_sum_ms() const;
  bool operator==(const PhaseTimes&) const = default;
};

// One gradient bucket's collective in one step.
struct BucketRecord {
  int index = 0;                          // position in the bucket plan (0 = first launched)
  int64_t bytes = 0;                      // bytes handed to the collective (after the hook's compression)
  int64_t elements = 0;                   // gradient elements the bucket covers
  std::string hook = "allreduce";         // "allreduce", "fp16", "bf16", "powersgd:4", ...
  std::string collective = "all_reduce";  // "all_reduce", "broadcast", "all_gather", "reduce_scatter"
  double launch_ms = 0;                   // bucket became ready and was queued on the comm stream
  double start_ms = 0;                    // communication began on the device
  double end_ms = 0;                      // communication completed
  std::string stream = "comm";            // the stream (trace thread) it ran on
  bool operator==(const BucketRecord&) const = default;
};

// One optimizer step on one rank (with gradient accumulation: the whole accumulation cycle).
struct StepRecord {
  int64_t step = 0;                   // step number as the trainer counts it
  double start_ms = 0;                // step start, from the rank's run start
  PhaseTimes phases;
  std::vector<BucketRecord> buckets;  // in launch order
  std::optional<double> gpu_busy_ms;  // time the compute stream ran kernels, when measured (CUPTI/nsys)
  bool operator==(const StepRecord&) const = default;
};

// Who measured: one per rank.
struct RankInfo {
  int rank = 0;
  std::string device_name;  // "NVIDIA H200"
  std::string precision;    // "fp32", "tf32", "bf16"
  int world_size = 1;
  std::string transport;    // how this rank reaches its peers: "P2P/CUMEM/read", "SHM/direct/direct", "NVLink", ""
  bool operator==(const RankInfo&) const = default;
};

// What was run: the flags of `ddpx train` that shape a step.
struct RunConfig {
  std::string model = "vit_l_32";
  int64_t batch = 32;  // per GPU, per micro-step
  std::string precision = "fp32";
  std::string hook = "allreduce";
  double bucket_mb = 25;
  double first_bucket_mb = 1;
  bool overlap = true;  // false with --no-overlap: buckets launch only after the whole backward pass
  int grad_accum = 1;
  int world = 1;
  bool ddp = true;  // false for the plain single-GPU run (no reducer at all)
  int workers = 8;  // loader worker threads
  bool operator==(const RunConfig&) const = default;

  // batch * grad_accum * world: images consumed by one optimizer step across all ranks.
  int64_t images_per_step() const { return batch * grad_accum * world; }
};

struct RankRun {
  RankInfo info;
  std::vector<StepRecord> steps;  // measured steps only (warm-up excluded)
  bool operator==(const RankRun&) const = default;
};

// Everything `ddpx report` needs: the configuration and every rank's measured steps.
struct RunReport {
  RunConfig config;
  std::vector<RankRun> ranks;  // ranks[k].info.rank == k
  bool operator==(const RunReport&) const = default;
};

// Last bucket completion minus first bucket launch; 0 without buckets.
double comm_window_ms(const std::vector<BucketRecord>& buckets);

// Communication the step waited for: (last bucket end - backward end) clipped at 0, plus comm that ran serially
// outside the bucket timeline (e.g. a --no-overlap all-reduce the trainer timed separately). backward_end_ms is an
// offset from the step start, like the bucket times.
double exposed_comm_ms(const std::vector<BucketRecord>& buckets, double backward_end_ms, double serial_comm_ms = 0);

// Sets step.phases.comm_ms and exposed_comm_ms from step.buckets with the two functions above.
void fill_comm_phases(StepRecord& step, double backward_end_ms, double serial_comm_ms = 0);

void to_json(nlohmann::json& j, const PhaseTimes& value);
void from_json(const nlohmann::json& j, PhaseTimes& value);
void to_json(nlohmann::json& j, const BucketRecord& value);
void from_json(const nlohmann::json& j, BucketRecord& value);
void to_json(nlohmann::json& j, const StepRecord& value);
void from_json(const nlohmann::json& j, StepRecord& value);
void to_json(nlohmann::json& j, const RankInfo& value);
void from_json(const nlohmann::json& j, RankInfo& value);
void to_json(nlohmann::json& j, const RunConfig& value);
void from_json(const nlohmann::json& j, RunConfig& value);
void to_json(nlohmann::json& j, const RankRun& value);
void from_json(const nlohmann::json& j, RankRun& value);
void to_json(nlohmann::json& j, const RunReport& value);
void from_json(const nlohmann::json& j, RunReport& value);

// Reads / writes a run report file. Errors (ddpx::Error) name the file and the field that is wrong; reading also
// checks that ranks are numbered 0..n-1 in order and that every rank has at least one step.
RunReport load_run_report(const std::string& path);
void save_run_report(const RunReport& report, const std::string& path);

}  // namespace ddpx
