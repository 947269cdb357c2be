// The seed's scaling table before renting the machines: for every rank count N, hook and bucket cap, the
// overlapped DDP step simulated from one-rank measurements and a link model.
// Guarantees (predict_scaling):
//  - Per row: buckets are re-cut from the report's gradient tensors at the row's cap (PyTorch's rule); each is ready
//    at its last tensor's ready time; its duration is the hook's own work (from the report of that hook when one
//    was given, else from the base report, flagged hook_cost_measured = false) plus its all-reduce calls priced by
//    allreduce_cost(); the comm stream runs them in order (overlap_timeline.hpp). Step = the report's step without
//    communication (MeasuredStep::compute_ms) + exposed communication. Steps/s = 1000 / step.
//  - The phases come from the report of the row's hook when there is one (its backward carries that hook's
//    slow-down), else from the base report (the first given).
//  - Scaling efficiency = predicted steps/s at N / baseline steps/s, the baseline being the fastest given report's
//    measured steps/s (a run without --ddp when one is given): per-rank batch fixed, as in the seed.
//  - The verdict names what bounds the row: compute (exposed < 5% of the step), per-message latency, the hook's
//    own work, or link bandwidth, with the figures.
//  - Caps that cut the report's tensors into the same buckets give the same row: one row is kept (the first cap),
//    listing the others in same_plan_caps.
//  - Recommendations: per N the fastest row, and the fastest lossless one (allreduce: fp16/bf16 and PowerSGD
//    change what training computes, as the seed warns). The recommendation is the lossless row unless a lossy one
//    is faster by more than kLossyMargin (the model's own precision; a hook whose own work was not measured
//    included): a tie goes to the lossless hook, and the line says so.
//  - A CPU report priced on a GPU link preset gets a note saying that the compute is a CPU's and the link a GPU's.
//  - Inputs that do not fit are errors naming the file or flag (see check_inputs in the .cpp).
#pragma once
#include <string>
#include <vector>

#include "predict/link_model.hpp"
#include "predict/measured_step.hpp"

namespace ddpx::predict {

struct PredictionRequest {
  std::vector<MeasuredStep> reports;  // [0] is the base; at most one per hook
  LinkModel link;
  std::vector<int> ranks;             // each 2..max_ranks(link)
  std::vector<CommHookSpec> hooks;  // wire shapes (predicted_hook)
  std::vector<double> bucket_caps_mb;
  double first_bucket_mb = 1;
};

struct PredictedRow {
  int ranks = 0;
  CommHookSpec hook;
  double bucket_cap_mb = 0;
  int buckets = 0;
  int messages = 0;
  double step_ms = 0, steps_per_s = 0, scaling_efficiency = 0;
  double compute_ms = 0;       // the step without communication
  double backward_ms = 0;
  double comm_busy_ms = 0, exposed_comm_ms = 0, hidden_comm_ms = 0;
  double comm_latency_ms = 0, comm_bandwidth_ms = 0, hook_own_ms = 0;
  int64_t wire_bytes = 0;      // bytes handed to all-reduce calls per step
  int ring_calls = 0, tree_calls = 0;
  bool hook_cost_measured = false;
  std::vector<double> same_plan_caps;  // other caps that cut the same buckets (folded into this row)
  std::string phases_from;     // the report file whose phases the row uses
  std::string bound;           // "compute", "latency", "hook", "bandwidth"
  std::string verdict;
};

// A lossy hook is recommended over the fastest lossless row only when faster than it by more than this.
inline constexpr double kLossyMargin = 0.02;

struct Recommendation {
  int ranks = 0;
  int fastest = -1;           // index into Prediction::rows
  int fastest_lossless = -1;  // allreduce rows only; -1 when none was asked for
  int recommended = -1;       // fastest, or fastest_lossless when the lossy fastest is within kLossyMargin of it
  bool tie_to_lossless = false;  // the fastest is lossy but within the margin: recommended is the lossless row
};

struct Prediction {
  double baseline_steps_per_s = 0;
  std::string baseline_from;
  std::vector<PredictedRow> rows;  // ranks, then hook, then cap, in request order
  std::vector<Recommendation> recommendations;  // one per rank count
  std::vector<std::string> notes;  // assumptions that apply to these inputs
};

// Checks the inputs against each other (see the .cpp) and simulates every row.
Prediction predict_scaling(const PredictionRequest& request);

// Powers of two from 2 to max_ranks(link).
std::vector<int> default_ranks(const LinkModel& link);

}  // namespace ddpx::predict
