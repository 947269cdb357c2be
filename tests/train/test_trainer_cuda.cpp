// GPU-labelled end-to-end checks of the CUDA training path (skipped where no GPU is found): learnable data
// converges in every precision, the optimizer overlapped with backward equals the update after it, DDP's timed
// graphs replayed at progress lines alone carry bucket timings and equal eager DDP, non-finite steps are caught on
// the device, and a resumed run continues. What holds for every model family (CUDA equals CPU, graph equals eager,
// DDP at world 1 equals plain, two GPUs equal one) is test_family_properties_cuda.cpp's; the CPU ranks' failure
// cases are test_trainer_multirank_cpu.cpp's.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "gpu_guard.hpp"
#include "report/step_record.hpp"
#include "saved_weights.hpp"
#include "train/trainer.hpp"
#include "train_runs.hpp"
#include "two_ranks.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using testing::saved_weights;
using testing::max_abs_diff;
using testing::gpu_run;

using testing::CliResult;
using testing::run_cli;
using testing::scratch;

TEST(CudaTraining, LearnableDataConvergesInEveryPrecision) {
  DDPX_REQUIRE_GPU();
  for (const char* precision : {"fp32", "tf32", "bf16"}) {
    TrainOptions o = gpu_run();
    o.precision = parse_precision(precision);
    o.batch = 16;
    o.steps = 150;
    o.optimizer = OptimizerSpec{.kind = OptimizerKind::adamw, .lr = 2e-3f};
    o.cuda_graph = GraphPolicy::automatic;
    const TrainSummary s = run_training(o);
    EXPECT_LT(s.final_loss, 0.35 * s.first_loss) << precision << ": " << s.first_loss << " -> " << s.final_loss;
  }
}

// Note [Optimizer overlapped with backward] (train/step_engine.hpp): span updates on the engine's update stream (no
// DDP) or on the communication stream after each bucket (DDP, world 1) run the same element-wise kernels as the
// update after backward, so the weights are bit-identical: eager and graph-replayed, SGD with momentum, Nesterov
// and weight decay, AdamW, bf16 (whose bf16 weight copy the spans update too), and with accumulation.
TEST(CudaTraining, OverlappedOptimizerEqualsTheUpdateAfterBackward) {
  DDPX_REQUIRE_GPU();
  struct Case {
    const char* name;
    const char* optimizer;
    const char* precision;
    const char* graph;
    bool ddp;
    int64_t accum;
    const char* hook = "allreduce";
  };
  const Case cases[] = {{"sgd graph", "sgd", "fp32", "on", false, 1},  {"sgd eager", "sgd", "fp32", "off", false, 1},
                        {"sgd bf16 graph", "sgd", "bf16", "on", false, 1}, {"sgd ddp graph", "sgd", "bf16", "on", true, 1},
                        {"sgd ddp accum", "sgd", "fp32", "off", true, 2}, {"adamw", "adamw", "bf16", "off", false, 1},
                        {"adamw ddp", "adamw", "fp32", "off", true, 1},
                        // Note [Widening fused into the update]: overlapped, the update reads the hook's wire buffer
                        {"bf16 hook graph", "sgd", "bf16", "on", true, 1, "bf16"},
                        {"fp16 hook eager", "sgd", "fp32", "off", true, 1, "fp16"},
                        {"bf16 hook accum", "sgd", "fp32", "off", true, 2, "bf16"},
                        {"bf16 hook adamw", "adamw", "bf16", "off", true, 1, "bf16"},
                        // Note [Low-rank gradients fused into the update]: overlapped, the update reads PowerSGD's
                        // factors (from step 2 on; rank 3 is zero-padded to the kernels' width 4)
                        {"powersgd graph", "sgd", "bf16", "on", true, 1, "powersgd:2:2"},
                        {"powersgd eager rank 3", "sgd", "fp32", "off", true, 1, "powersgd:3:2"},
                        {"powersgd accum", "sgd", "fp32", "off", true, 2, "powersgd:2:2"},
                        {"powersgd adamw", "adamw", "fp32", "off", true, 1, "powersgd:2:2"}};
  for (const Case& c : cases) {
    TrainOptions overlapped = gpu_run(), after = gpu_run();
    for (TrainOptions* o : {&overlapped, &after}) {
      o->optimizer.kind = parse_optimizer_kind(c.optimizer);
      o->precision = parse_precision(c.precision);
      o->cuda_graph = parse_graph_policy(c.graph);
      o->ddp = c.ddp;
      o->grad_accum = c.accum;
      o->comm_hook = parse_comm_hook_spec(c.hook);
      o->bucket_mb = o->first_bucket_mb = 0.02;  // several buckets
      if (std::string(c.optimizer) == "sgd") o->optimizer.nesterov = true, o->optimizer.weight_decay = 1e-4f;
      if (std::string(c.optimizer) == "adamw")
        o->optimizer.lr = 1e-3f, o->optimizer.momentum = 0, o->optimizer.weight_decay = 0.01f;
    }
    overlapped.optimizer_overlap = OverlapPolicy::on;
    after.optimizer_overlap = OverlapPolicy::off;
    overlapped.save = scratch(std::string("overlapped.safetensors")).string();
    after.save = scratch(std::string("after.safetensors")).string();
    run_training(overlapped);
    run_training(after);
    EXPECT_EQ(max_abs_diff(saved_weights(overlapped.save), saved_weights(after.save)), 0.0) << c.name;
  }
}

// With a reducer, graph runs replay a second, timed graph per input parity at progress lines (bucket ready times
// are a node per bucket on the compute stream: see Note [Bucket ready times cost a graph node]). Both graphs
// compute the same step, so the weights equal eager DDP's; only the progress-line steps carry bucket timings.
TEST(CudaTraining, DdpGraphsTimeBucketsAtProgressLinesOnlyAndEqualEager) {
  DDPX_REQUIRE_GPU();
  TrainOptions eager = gpu_run(), graphed = gpu_run();
  eager.ddp = graphed.ddp = true;
  eager.bucket_mb = graphed.bucket_mb = 0.02;  // vit_tiny_test is 0.08 MB: about 4 buckets
  eager.first_bucket_mb = graphed.first_bucket_mb = 0.02;
  eager.log_every = graphed.log_every = 3;
  eager.cuda_graph = GraphPolicy::off;
  graphed.cuda_graph = GraphPolicy::on;
  eager.save = scratch("ddp_eager.safetensors").string();
  graphed.save = scratch("ddp_graphed.safetensors").string();
  graphed.report = scratch("ddp_graphed.json").string();
  run_training(eager);
  run_training(graphed);
  EXPECT_EQ(max_abs_diff(saved_weights(eager.save), saved_weights(graphed.save)), 0.0);
  const RunReport report = load_run_report(graphed.report);
  ASSERT_EQ(report.ranks.size(), 1u);
  // Warm-up 2: step 1 is eager, steps 2 and 3 capture the plain graphs, 4 and 5 the timed ones; measured steps
  // are 3..12, so the progress-line steps with bucket timings are 6, 9 and 12 (step 3 replayed a plain graph).
  std::vector<int64_t> timed_steps;
  for (const StepRecord& step : report.ranks[0].steps) {
    if (step.buckets.empty()) continue;
    timed_steps.push_back(step.step);
    ASSERT_GT(step.buckets.size(), 1u) << "step " << step.step;
    for (const BucketRecord& b : step.buckets) {
      EXPECT_LE(b.launch_ms, b.start_ms) << "step " << step.step << " bucket " << b.index;
      EXPECT_GT(b.launch_ms, 0.0) << "step " << step.step << " bucket " << b.index;
    }
    // Backward order: later buckets become ready later.
    EXPECT_LT(step.buckets.front().launch_ms, step.buckets.back().launch_ms) << "step " << step.step;
  }
  EXPECT_EQ(timed_steps, (std::vector<int64_t>{6, 9, 12}));
}

// Numerics on the CUDA path: every step is checked on the device (also inside replayed CUDA graphs) and read at
// the points where the host synchronizes anyway. SGD at lr 1e30 with the divergence rule off turns the numbers
// non-finite within a few steps; with progress lines only at the end (--log-every 1000) the run must still name
// the FIRST bad step (not the last one), and no checkpoint or --save may be written from that state.
TEST(CudaTraining, NonFiniteStepsAreCaughtOnTheDeviceAndNothingIsSaved) {
  DDPX_REQUIRE_GPU();
  for (const char* graphs : {"off", "on"}) {
    SCOPED_TRACE(graphs);
    const fs::path ck = scratch(std::string("nonfinite_ck_") + graphs), save = scratch(std::string("nonfinite_") + graphs + ".safetensors");
    fs::remove_all(ck);
    fs::remove(save);
    const CliResult r = run_cli(fmt::format(
        "train --device cuda --model vit_tiny_test --batch 8 --steps 40 --warmup 2 --workers 1 --lr 1e30 "
        "--divergence-ratio 0 --log-every 1000 --cuda-graph {} --checkpoint-dir {} --save {}",
        graphs, ck.string(), save.string()));
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_TRUE(r.output.find("not finite") != std::string::npos || r.output.find("the loss is") != std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("at step 40"), std::string::npos) << "the first bad step must be named:\n" << r.output;
    EXPECT_FALSE(fs::exists(save));
    EXPECT_FALSE(fs::exists(ck / "checkpoint.safetensors"));
  }
  // Divergence (finite loss far above the first) is caught by the same device flag. Weight decay 0: since AdamW's
  // default became PyTorch's 1e-2, lr 1e6 also scales every weight by 1 - 1e4 per step, and on the GPU a gradient
  // of step 2 overflowed (a non-finite gradient is reported first) before the loss could show the divergence.
  const CliResult adamw = run_cli("train --device cuda --model vit_tiny_test --batch 8 --steps 30 --workers 1 "
                                  "--optimizer adamw --lr 1e6 --weight-decay 0 --log-every 1000");
  EXPECT_EQ(adamw.status, 2) << adamw.output;
  EXPECT_NE(adamw.output.find("--divergence-ratio"), std::string::npos) << adamw.output;
}

TEST(CudaTraining, ResumeOnTheGpuContinuesTheRun) {
  DDPX_REQUIRE_GPU();
  TrainOptions full = gpu_run(), first = gpu_run(), resumed = gpu_run();
  full.cuda_graph = first.cuda_graph = resumed.cuda_graph = GraphPolicy::off;
  full.save = scratch("resume_full.safetensors").string();
  first.steps = 6;
  first.checkpoint_dir = scratch("resume_ckpt").string();
  resumed.resume = first.checkpoint_dir;
  resumed.save = scratch("resume_resumed.safetensors").string();
  run_training(full);
  run_training(first);
  run_training(resumed);
  // Deterministic kernels (no atomics in the reductions): bit-identical is expected.
  EXPECT_EQ(max_abs_diff(saved_weights(full.save), saved_weights(resumed.save)), 0.0);
}

}  // namespace
}  // namespace ddpx
