// MeasuredStep: what a one-rank run report says about one training step, in the terms ddpx predict simulates.
// Guarantees (measure_step):
//  - Only reports of one rank are taken (world 1, with or without --ddp); grad_accum 1; gradient_tensors present;
//    each refusal names the file and the field and says how to record a suitable report.
//  - Phases are medians over the measured steps; other_ms = 1000 / (the report's steps/s) - (phases + exposed
//    comm), clipped at 0: what the step costs beyond its phases, the time between recorded steps included. So
//    compute_ms() + the measured exposed communication is the measured step (1000 / steps/s).
//  - Ready times are from the backward pass's start. Anchor: the last bucket becomes ready when backward ends
//    (its last tensor, conv_proj, is the last gradient), so bucket k is ready at backward - (ready_last - ready_k)
//    on whatever clock the report used; clipped to [0, backward]. A tensor's ready time is interpolated linearly in
//    gradient elements between the ends of the report's buckets (and 0 at the start): exact for a tensor that ends a
//    bucket, an estimate inside one. Without bucket timings (no --ddp) or with --no-overlap the whole backward is
//    taken as uniform in elements.
//  - The hook's own work (hook + optimizer span on the comm stream; at world 1 no collective runs) is fitted per
//    bucket as fixed_ms + per_element_ms * elements from the buckets' median durations (fixed >= 0).
//  - The report's buckets must be the plan its gradient_tensors and bucket_mb give (checked, else an error).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "comm_plan/bucket_plan.hpp"
#include "comm_plan/hook_catalogue.hpp"
#include "report/step_record.hpp"

namespace ddpx::predict {

struct OwnCostModel {
  bool measured = false;        // false: no bucket timings in the report (0 assumed)
  double fixed_ms = 0;          // per bucket
  double per_element_ms = 0;    // per gradient element of the bucket
  double ms(int64_t elements) const { return fixed_ms + per_element_ms * static_cast<double>(elements); }
};

struct MeasuredStep {
  std::string file;
  std::string model, precision, device;  // device: "cpu" or the GPU's name
  bool bf16_weight_grads = false;  // config.weight_grads was "bf16" (false for fp32 and reports from before it)
  bool ddp = false;
  CommHookSpec hook;  // its wire shape (predicted_hook)
  double bucket_mb = 25, first_bucket_mb = 1;
  bool overlap = true;
  int64_t batch = 0;
  double data_wait_ms = 0, h2d_copy_ms = 0, forward_ms = 0, backward_ms = 0, optimizer_ms = 0, other_ms = 0;
  double measured_exposed_ms = 0;  // what the one-rank run itself waited for its buckets
  double steps_per_s = 0;          // report_steps_per_s
  std::vector<GradientTensorInfo> tensors;
  std::vector<double> tensor_ready_ms;  // per tensor, from backward start
  OwnCostModel own;
  int measured_buckets = 0;             // buckets with timings in the report
  bool ready_times_measured = false;    // false: uniform backward assumed
  // forward + backward + optimizer + data + other: the step without exposed communication.
  double compute_ms() const {
    return data_wait_ms + h2d_copy_ms + forward_ms + backward_ms + optimizer_ms + other_ms;
  }
};

MeasuredStep measure_step(const RunReport& report, const std::string& file);

// The bucket plan ddp cuts from the report's tensors at these caps (comm_plan/bucket_plan.hpp, PyTorch's rule);
// caps must be positive (an error naming --bucket-cap-mb otherwise).
BucketPlan bucket_plan_of(const std::vector<GradientTensorInfo>& tensors, double cap_mb, double first_cap_mb);

// A hook as the model tells hooks apart: train's --comm-hook spelling read by the hook catalogue (errors name
// `flag`), kept to its wire shape: "powersgd:4:2", the canonical spelling run reports record, is "powersgd:4",
// since START says only from which step the hook compresses and the model is of the compressed steps. PowerSGD's
// R is at most 1024 here.
CommHookSpec predicted_hook(std::string_view text, std::string_view flag);

}  // namespace ddpx::predict
