// The whole-step CUDA graph policy (plan_step_graphs), checked without a GPU: which runs replay graphs, the step
// they capture at (never a step where the communication hook still allocates), and the errors of --cuda-graph on.
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "ddp/comm_hook_factory.hpp"
#include "train/step_graphs.hpp"

namespace ddpx {
namespace {

StepGraphOptions graph_run(const std::string& hook = "allreduce", int64_t warmup = 5) {
  StepGraphOptions o;
  o.optimizer.kind = OptimizerKind::sgd;
  o.comm_hook = parse_comm_hook_spec(hook);
  o.warmup_steps = warmup;
  return o;
}

int64_t capturable_from(const std::string& hook) { return make_comm_hook(hook)->capturable_from_step(); }

std::string error_of(const StepGraphOptions& o, bool cuda, int64_t hook_capturable_from) {
  try {
    plan_step_graphs(o, cuda, 0, hook_capturable_from);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(StepGraphs, PlainRunsCaptureAfterTheWarmUpAndAfterResuming) {
  const StepGraphSchedule fresh = plan_step_graphs(graph_run("allreduce", 5), true, 0, 0);
  EXPECT_TRUE(fresh.enabled);
  EXPECT_EQ(fresh.first_step, 4);  // steps 4 and 5 capture the two input parities, both inside the warm-up
  // At least one eager step before the capture, however short the warm-up.
  EXPECT_EQ(plan_step_graphs(graph_run("allreduce", 0), true, 0, 0).first_step, 2);
  // Resumed at step 100: the same distance from the first step this process runs.
  EXPECT_EQ(plan_step_graphs(graph_run("allreduce", 5), true, 100, 0).first_step, 104);
}

TEST(StepGraphs, WithTimedVariantsFourCapturesFitTheWarmUp) {
  // Steps 2..5 capture plain (2, 3: both input parities) and timed graphs (4, 5); step 1 stays eager.
  const StepGraphSchedule timed = plan_step_graphs(graph_run("allreduce", 5), true, 0, 0, true);
  EXPECT_TRUE(timed.enabled);
  EXPECT_TRUE(timed.timed_variants);
  EXPECT_EQ(timed.first_step, 2);
  EXPECT_EQ(plan_step_graphs(graph_run("allreduce", 20), true, 0, 0, true).first_step, 17);
  EXPECT_EQ(plan_step_graphs(graph_run("allreduce", 5), true, 100, 0, true).first_step, 102);
  // The hook's capturable step still comes first.
  EXPECT_EQ(plan_step_graphs(graph_run("powersgd:4", 5), true, 0, capturable_from("powersgd:4"), true).first_step, 4);
}

TEST(StepGraphs, TimedGraphsReplayOnlyWhereBucketTimesAreRead) {
  const StepGraphSchedule timed = plan_step_graphs(graph_run("allreduce", 5), true, 0, 0, true);
  // The captures: plain, plain, timed, timed, whatever is sampled.
  EXPECT_EQ(choose_graph_variant(timed, 2, true), GraphVariant::plain);
  EXPECT_EQ(choose_graph_variant(timed, 3, true), GraphVariant::plain);
  EXPECT_EQ(choose_graph_variant(timed, 4, false), GraphVariant::timed);
  EXPECT_EQ(choose_graph_variant(timed, 5, false), GraphVariant::timed);
  // Afterwards: timed exactly at the sampled steps.
  EXPECT_EQ(choose_graph_variant(timed, 6, false), GraphVariant::plain);
  EXPECT_EQ(choose_graph_variant(timed, 20, true), GraphVariant::timed);
  EXPECT_EQ(choose_graph_variant(timed, 21, false), GraphVariant::plain);
  // Without a reducer there is nothing to time: always plain.
  const StepGraphSchedule plain = plan_step_graphs(graph_run("allreduce", 5), true, 0, 0, false);
  EXPECT_FALSE(plain.timed_variants);
  EXPECT_EQ(choose_graph_variant(plain, 20, true), GraphVariant::plain);
}

TEST(StepGraphs, MixingRunsReplayNoGraph) {
  // --mixup/--cutmix draw each batch's mix on the host: a replay would repeat the captured draw.
  StepGraphOptions mixing = graph_run("allreduce", 5);
  mixing.host_draw_per_batch = true;
  EXPECT_FALSE(plan_step_graphs(mixing, true, 0, 0).enabled);
  mixing.cuda_graph = GraphPolicy::on;
  const std::string error = error_of(mixing, true, 0);
  EXPECT_NE(error.find("--cuda-graph on: --mixup/--cutmix"), std::string::npos) << error;
}

TEST(StepGraphs, WeightAverageOnAHostCadenceReplaysNoGraph) {
  // --ema-every N > 1 or --ema-copy-epochs: the host decides each step's update, which a replay would not.
  StepGraphOptions cadence = graph_run("allreduce", 5);
  cadence.host_ema_cadence = true;
  EXPECT_FALSE(plan_step_graphs(cadence, true, 0, 0).enabled);
  cadence.cuda_graph = GraphPolicy::on;
  const std::string error = error_of(cadence, true, 0);
  EXPECT_NE(error.find("--cuda-graph on: --ema-every above 1 and --ema-copy-epochs"), std::string::npos) << error;
  TrainOptions options;
  options.recipe.ema_decay = 0.9;
  EXPECT_FALSE(step_graph_options(options).host_ema_cadence);  // every step: graphs as before
  options.recipe.ema_cadence.every = 32;
  EXPECT_TRUE(step_graph_options(options).host_ema_cadence);
}

TEST(StepGraphs, PowerSgdsFirstCompressedStepIsNeverTheCapturedOne) {
  // Trainer step s is synchronized step s - 1; PowerSGD with START 2 compresses (and allocates) first at
  // synchronized step 2 = trainer step 3, so the capture may come at trainer step 4 at the earliest.
  EXPECT_EQ(capturable_from("powersgd:4"), 3);
  EXPECT_EQ(plan_step_graphs(graph_run("powersgd:4", 2), true, 0, capturable_from("powersgd:4")).first_step, 4);
  EXPECT_EQ(plan_step_graphs(graph_run("powersgd:4", 0), true, 0, capturable_from("powersgd:4")).first_step, 4);
  // An explicit START in the hook's spec counts, not --powersgd-start (parse_comm_hook_spec's default).
  StepGraphOptions o = graph_run("powersgd:4:10", 2);
  o.comm_hook = parse_comm_hook_spec("powersgd:4:10", /*default_powersgd_start=*/2);
  EXPECT_EQ(capturable_from("powersgd:4:10"), 11);
  EXPECT_EQ(plan_step_graphs(o, true, 0, capturable_from("powersgd:4:10")).first_step, 12);
  // A long warm-up is kept as it is.
  EXPECT_EQ(plan_step_graphs(graph_run("powersgd:4", 20), true, 0, capturable_from("powersgd:4")).first_step, 19);
}

TEST(StepGraphs, RunsWhereReplayIsNotExactStayEager) {
  StepGraphOptions adamw = graph_run();
  adamw.optimizer.kind = OptimizerKind::adamw;
  EXPECT_FALSE(plan_step_graphs(adamw, true, 0, 0).enabled);
  StepGraphOptions accumulating = graph_run();
  accumulating.grad_accum = 4;
  EXPECT_FALSE(plan_step_graphs(accumulating, true, 0, 0).enabled);
  EXPECT_FALSE(plan_step_graphs(graph_run(), true, 0, CommHook::kNeverCapturable).enabled);
  EXPECT_FALSE(plan_step_graphs(graph_run(), false, 0, 0).enabled);
  StepGraphOptions off = graph_run();
  off.cuda_graph = GraphPolicy::off;
  EXPECT_FALSE(plan_step_graphs(off, true, 0, 0).enabled);
}

TEST(StepGraphs, CudaGraphOnRefusesWhatCannotBeReplayedNamingTheFlag) {
  StepGraphOptions on = graph_run();
  on.cuda_graph = GraphPolicy::on;
  EXPECT_EQ(error_of(on, true, 0), "(no error)");
  EXPECT_NE(error_of(on, false, 0).find("--cuda-graph on needs --device cuda"), std::string::npos);
  EXPECT_NE(error_of(on, true, CommHook::kNeverCapturable).find("changes its work every step"), std::string::npos);
  on.optimizer.kind = OptimizerKind::adamw;
  const std::string adamw = error_of(on, true, 0);
  EXPECT_NE(adamw.find("--optimizer adamw"), std::string::npos) << adamw;
  EXPECT_NE(adamw.find("--cuda-graph auto or off"), std::string::npos) << adamw;
}

}  // namespace
}  // namespace ddpx
