// Verdict: a plain-sentence answer to "what bounds my step, and what should I change?", from a run report.
// Guarantees: the verdict is a pure function of the report (and the optional peak table); every sentence carries
// the numbers it rests on; the advice names concrete `ddpx train` flags. Rules (also in docs/verdict.md):
//
//  Inputs: across-rank medians of the per-rank median phases (step_breakdown.hpp); T = median total.
//    exposed  E = exposed_comm                       (communication the step waited for)
//    input    I = data_wait + h2d_copy               (waiting for the batch)
//    launch   G = T - gpu_busy - E - I, clipped at 0 (GPU idle between kernels: the CPU could not launch fast
//                 enough); only when every step recorded gpu_busy_ms
//    compute  C = forward + backward + optimizer
//  Bound: among E/T >= 10%, I/T >= 10%, G/T >= 20%, the largest share (ties: communication, input, launch);
//  when none qualifies, compute.
//  Advice for communication (world > 1), first rule that applies:
//    1. --no-overlap set                       -> drop it.
//    2. slow link (SHM or NET transport):
//         hook allreduce                        -> --comm-hook powersgd:4, or --comm-hook bf16 --bucket-mb 25
//         hook fp16/bf16, one bucket per step   -> --bucket-mb 25, or --comm-hook powersgd:4
//         hook fp16/bf16                        -> --comm-hook powersgd:4
//         hook powersgd                         -> --grad-accum 2x or a larger --batch
//    3. fast or unknown link (P2P, NVLink):
//         one bucket per step                   -> --bucket-mb 25
//         hook allreduce                        -> --comm-hook bf16, or --grad-accum 2
//         otherwise                             -> --grad-accum 2x or a larger --batch
//  DDP's cost D (analysis/ddp_cost.hpp): measured DDP step - calibrated plain step, stated as its two parts (exposed
//  communication + compute slowed by DDP's work beside it), which add up to D, and the hooks' time under compute
//  said apart (it overlapped; it is not a term of D). Without
//  calibration steps only E is known, and the sentence says "at least" and that the hidden part is not calibrated.
//  World 1 with DDP: the communication share is D/T (clipped at 0) when calibrated, E/T otherwise; communication
//  advice is "run without --ddp", and whatever the bound, a note states what DDP costs. World > 1 with DDP and
//  calibration: a note states D and its parts. Input: --workers when data_wait >= h2d_copy, else the exposed copy.
//  Launch: --cuda-graph.
//  Compute: CPU engine -> --device cuda; fp32/tf32 -> --precision bf16; bf16 -> only faster kernels or a larger
//  --batch help.
//  Notes: a straggler more than 5% slower than the median rank; phases that do not add up to the step (> 5%);
//  with a peak table, communication-bound steps whose buckets reach under 50% of the measured peak busbw.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "analysis/comm_stats.hpp"
#include "report/step_record.hpp"

namespace ddpx {

enum class Bound { communication, input, launch, compute };
std::string_view bound_name(Bound bound);  // "communication", "input", "launch", "compute"

struct VerdictThresholds {
  double exposed_comm = 0.10;   // share of the step
  double input = 0.10;
  double launch = 0.20;
  double straggler = 0.05;      // slower than the median rank by this share
  double low_pct_of_peak = 50;  // percent
};

struct Verdict {
  Bound bound = Bound::compute;
  double fraction = 0;             // the bounding part's share of the step, 0..1
  std::string finding;             // what bounds the step, with numbers
  std::string advice;              // the change most likely to help
  std::vector<std::string> notes;  // further findings, each a full sentence

  // "<finding>: <advice>." followed by the notes.
  std::string text() const;
};

// Throws ddpx::Error when the report has no steps (see summarize_steps).
Verdict diagnose(const RunReport& report, const PeakTable* peak = nullptr, const VerdictThresholds& thresholds = {});

void to_json(nlohmann::json& j, const Verdict& verdict);

}  // namespace ddpx
