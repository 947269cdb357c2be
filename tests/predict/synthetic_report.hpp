// A one-rank run report built by hand for predict's tests: four [10, 10] gradient tensors at 128-element strides,
// forward 10 ms, backward 40 ms, optimizer 5 ms, three identical measured steps. With buckets (cap 0.0004 MiB: one
// tensor each), bucket k becomes ready 10 * (k + 1) ms into backward (launch times on a clock that starts 10 ms
// before backward) and its own work is elements * 0.01 ms.
#pragma once
#include "report/step_record.hpp"

namespace ddpx::testing {

inline RunReport synthetic_one_rank_report(bool with_buckets, const std::string& hook = "allreduce") {
  RunReport report;
  report.config.model = "vit_synthetic";
  report.config.batch = 4;
  report.config.precision = "fp32";
  report.config.hook = hook;
  report.config.bucket_mb = 0.0004;
  report.config.first_bucket_mb = 0.0004;
  report.config.world = 1;
  report.config.ddp = with_buckets;
  for (int k = 0; k < 4; ++k)
    report.config.gradient_tensors.push_back({"t" + std::to_string(k), {10, 10}, 128 * k, 100});
  RankRun rank;
  rank.info.device_name = "cpu";
  rank.info.precision = "fp32";
  for (int s = 0; s < 3; ++s) {
    StepRecord step;
    step.step = 10 + s;
    step.start_ms = 100.0 * s;
    step.phases.forward_ms = 10;
    step.phases.backward_ms = 40;
    step.phases.optimizer_ms = 5;
    step.phases.total_ms = 56;  // 1 ms the phases do not account for
    if (with_buckets) {
      for (int k = 0; k < 4; ++k) {
        BucketRecord b;
        b.index = k;
        b.elements = k < 3 ? 128 : 100;
        b.bytes = b.elements * 4;
        b.hook = hook;
        b.launch_ms = 10 + 10.0 * (k + 1);
        b.start_ms = b.launch_ms;
        b.end_ms = b.start_ms + 0.01 * static_cast<double>(b.elements);
        step.buckets.push_back(b);
      }
    }
    rank.steps.push_back(step);
  }
  report.ranks.push_back(rank);
  report.throughput = RunThroughput{1000.0 / 56, 4000.0 / 56};
  return report;
}

}  // namespace ddpx::testing
