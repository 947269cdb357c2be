// PyTorch profiler traces as run reports: what `ddpx report --torch-profile` reads, so that a PyTorch DDP job
// gets ddpx's breakdown, verdict and prediction without running under ddpx.
// Guarantees:
//  - Reads the Chrome traces torch.profiler's export_chrome_trace() writes, one per rank: Kineto's
//    ({"traceEvents": [...]}, PyTorch with Kineto: the wheels) and the legacy profiler's (a bare list of events,
//    Debian's torch 1.13, built without Kineto). Only complete events ("ph": "X") with name, ts and dur (µs) count.
//    Anything else (a ddpx trace, a run report, JSON without such events) is a ddpx::Error naming the file and what
//    it lacks, with how to record it.
//  - Steps are the ProfilerStep#N ranges (prof.step() each iteration). Within one, from the ranges PyTorch itself
//    records: forward = from DistributedDataParallel.forward's start to the first autograd node of the backward
//    pass (so it holds the loss, as ddpx's forward does); backward = the union of the autograd engine's
//    evaluate_function ranges less the c10d:: calls inside them (launching or waiting for a collective is not
//    compute); communication = the collectives' own ranges (gloo:<op>, nccl:<op>, and on GPUs the NCCL kernels,
//    category "kernel"), one BucketRecord each; exposed communication = the part of their union that no compute
//    range (forward, backward, optimizer) covers: report/time_intervals.hpp, the arithmetic ddpx's own runs use;
//    optimizer = Optimizer.step#* and Optimizer.zero_grad#* ranges; data wait = enumerate(DataLoader)#* ranges;
//    total = the ProfilerStep range. Bytes per collective come from Kineto's "In msg nelems" and "dtype" when
//    recorded, else 0 (bus bandwidth is then not computed).
//  - Ranks: Kineto's distributedInfo.rank where present, else the order of the files; every rank's traces must
//    hold the same step numbers, and a distributedInfo.world_size must equal the number of files. Steps start on
//    each rank's own clock, from its first recorded step (traces hold no clock offsets).
//  - A trace without ProfilerStep ranges, without DDP's forward range or without a backward pass in a step is an
//    error naming the file, the step and the range, with the profiler call that records it.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "report/step_record.hpp"

namespace ddpx {

struct TorchProfileOptions {
  int64_t batch = 1;               // images per rank per step (the traces do not say)
  std::string model = "pytorch";   // the report's model name
};

// One parsed trace (the file's JSON) as a rank's run; `what` names it in errors.
RankRun rank_run_from_torch_trace(const nlohmann::json& trace, const std::string& what, int file_index);
// Every rank's trace file as one run report (world = number of files).
RunReport read_torch_profiles(const std::vector<std::string>& paths, const TorchProfileOptions& options = {});
// A rank's median step less its exposed communication: its own work per step. DDP's ranks end every step together
// (the collectives wait for the last one), so their totals are alike; the late rank is the one with the most work
// of its own, and the others show its delay as exposed communication.
double median_step_less_exposed_ms(const RankRun& run);
// The rank with the least own work (a straggler's delay is no part of the step the others would run at).
int fastest_rank(const RunReport& report);
// The rank with the most own work: the one the others wait for in the collectives (lowest rank on ties).
int waited_for_rank(const RunReport& report);
// The one-rank report `ddpx predict` takes: `rank`'s steps without their communication (world 1, no buckets,
// the total less the exposed part), with the gradient buffer as one tensor of `gradient_elements` (the model's
// parameter count: the traces do not hold it).
RunReport one_rank_report(const RunReport& report, int rank, int64_t gradient_elements);

}  // namespace ddpx
