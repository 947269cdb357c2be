// The second model family through the same trainer (the "which model" seam, issue 14): the MLP classifier trains
// on the CPU with a falling loss, resumes from a checkpoint bit for bit, overlaps its optimizer with backward
// bit for bit, trains data-parallel over two MPI (and Gloo) ranks exactly like one rank with the whole batch, and
// its run report gives the step breakdown. GPU-labelled (skipped without a GPU): on CUDA through run_training in
// every precision, whole-step CUDA graphs equal eager steps, --ddp at world 1 equals plain training, and fp32
// matches the CPU engine.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "error_expect.hpp"
#include "gpu_guard.hpp"
#include "io/npy.hpp"
#include "io/param_safetensors.hpp"
#include "model/model_registry.hpp"
#include "saved_weights.hpp"
#include "train/trainer.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using testing::saved_weights;
using testing::max_abs_diff;
constexpr const char* kModel = "mlp_tiny_test";

fs::path scratch(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("ddpx_test_mlp_train_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

TrainOptions mlp_run(Device device, const std::string& optimizer = "sgd") {
  TrainOptions o;
  o.device = device;
  o.model = kModel;
  o.batch = 8;
  o.steps = 8;
  o.warmup_steps = 2;
  o.data = DataSource::learnable;
  o.optimizer.kind = parse_optimizer_kind(optimizer);
  o.optimizer.lr = optimizer == "sgd" ? 0.05f : 1e-3f;
  o.optimizer.momentum = optimizer == "sgd" ? 0.9f : 0.f;
  o.optimizer.weight_decay = 1e-4f;
  o.workers = 2;
  o.quiet = true;
  o.seed = 3;
  return o;
}


testing::CliResult run_cli(const std::string& args) { return testing::run_ddpx(args); }

TEST(MlpTraining, LearnableLossFallsClearly) {
  TrainOptions o = mlp_run(Device::cpu, "adamw");
  o.batch = 16;
  o.steps = 120;
  o.optimizer.lr = 2e-3f;
  const TrainSummary s = run_training(o);
  EXPECT_LT(s.final_loss, 0.35 * s.first_loss) << "first " << s.first_loss << " final " << s.final_loss;
}

class MlpResumeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(MlpResumeTest, ResumedRunEqualsUninterruptedRunBitForBit) {
  TrainOptions full = mlp_run(Device::cpu, GetParam());
  full.save = scratch("full_" + GetParam() + ".safetensors").string();
  run_training(full);
  TrainOptions first = mlp_run(Device::cpu, GetParam());
  first.steps = 5;
  first.checkpoint_dir = scratch("ckpt_" + GetParam()).string();
  first.checkpoint_every = 5;
  run_training(first);
  TrainOptions resumed = mlp_run(Device::cpu, GetParam());
  resumed.resume = first.checkpoint_dir;
  resumed.save = scratch("resumed_" + GetParam() + ".safetensors").string();
  run_training(resumed);
  EXPECT_EQ(saved_weights(full.save, kModel), saved_weights(resumed.save, kModel));
  // The checkpoint records the MLP's spec: resuming it as another model is refused naming both.
  TrainOptions other = resumed;
  other.model = "mlp_tiny_test:width=16";
  testing::expect_error([&] { run_training(other); }, {"mlp_tiny_test"});
}

INSTANTIATE_TEST_SUITE_P(Optimizers, MlpResumeTest, ::testing::Values("sgd", "adamw"));

TEST(MlpTraining, OverlappedOptimizerEqualsTheUpdateAfterBackwardWithAndWithoutDdp) {
  for (const bool ddp : {false, true}) {
    TrainOptions overlapped = mlp_run(Device::cpu), after = mlp_run(Device::cpu);
    for (TrainOptions* o : {&overlapped, &after}) {
      o->steps = 4;
      o->ddp = ddp;
      o->backend = BackendChoice::named("self");  // one process runs both trainings
      o->bucket_mb = 0.02;         // mlp_tiny_test (0.1 MB) in several buckets
      o->first_bucket_mb = 0.02;
    }
    overlapped.optimizer_overlap = OverlapPolicy::on;
    after.optimizer_overlap = OverlapPolicy::off;
    overlapped.save = scratch(fmt::format("overlapped_{}.safetensors", ddp)).string();
    after.save = scratch(fmt::format("after_{}.safetensors", ddp)).string();
    run_training(overlapped);
    run_training(after);
    EXPECT_EQ(saved_weights(overlapped.save, kModel), saved_weights(after.save, kModel))
        << (ddp ? "with" : "without") << " --ddp";
  }
}

TEST(MlpTraining, ReportGivesTheStepBreakdownAndEvalScoresTheWeights) {
  const std::string report = scratch("run.json").string(), saved = scratch("w.safetensors").string();
  const testing::CliResult trained = run_cli(fmt::format(
      "train --model {} --steps 12 --batch 4 --ddp --quiet --report {} --save {}", kModel, report, saved));
  ASSERT_EQ(trained.status, 0) << trained.output;
  const testing::CliResult r = run_cli("report " + report);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("step breakdown"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(kModel), std::string::npos) << r.output;
  const int64_t n = 4;
  write_npy(scratch("x.npy"), HostTensor::from_values<float>({n, 3, 16, 16}, std::vector<float>(n * 768, 0.25f)));
  const testing::CliResult eval = run_cli(fmt::format("eval --model {} --weights {} --images {}", kModel, saved,
                                                      scratch("x.npy").string()));
  EXPECT_EQ(eval.status, 0) << eval.output;
  EXPECT_NE(eval.output.find("image    0: class"), std::string::npos) << eval.output;
  const testing::CliResult table = run_cli(fmt::format("model --model {} --brief", kModel));
  EXPECT_NE(table.output.find("parameters: 25994"), std::string::npos) << table.output;
}

// Two ranks on batch 4 each train exactly like one rank on batch 8 (.npy input is taken in global order), through
// ddpx's own launcher, over MPI and over Gloo where built.
void expect_two_ranks_equal_one(const std::string& backend_flags) {
  const int64_t count = 64, numel = 3 * 16 * 16;
  std::vector<float> images(static_cast<size_t>(count * numel));
  std::vector<int32_t> labels(static_cast<size_t>(count));
  for (size_t i = 0; i < images.size(); ++i) images[i] = std::sin(0.37f * static_cast<float>(i)) * 1.5f;
  for (int64_t i = 0; i < count; ++i) labels[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7) % 10);
  const fs::path images_path = scratch("two_rank_images.npy"), labels_path = scratch("two_rank_labels.npy");
  write_npy(images_path, HostTensor::from_values<float>({count, 3, 16, 16}, images));
  write_npy(labels_path, HostTensor::from_values<int32_t>({count}, labels));
  const std::string common = fmt::format(
      "train --device cpu --model {} --steps 6 --warmup 2 --lr 0.05 --momentum 0.9 --workers 1 --images {} "
      "--labels {} --comm-timeout 60",
      kModel, images_path.string(), labels_path.string());
  const std::string one = scratch("one_rank.safetensors").string(), two = scratch("two_ranks.safetensors").string();
  const testing::CliResult single = run_cli(common + " --batch 8 --save " + one);
  ASSERT_EQ(single.status, 0) << single.output;
  const testing::CliResult pair = run_cli(common + " --batch 4 --nproc-per-node 2 --save " + two + backend_flags);
  ASSERT_EQ(pair.status, 0) << pair.output;
  EXPECT_NE(pair.output.find("2 rank(s)"), std::string::npos) << pair.output;
  const std::vector<float> a = saved_weights(one, kModel), b = saved_weights(two, kModel);
  EXPECT_LT(max_abs_diff(a, b), 2e-5);  // per-rank means then their average vs one mean: fp32 rounding only
  std::vector<float> initial(a.size());
  make_model(kModel)->init_params(initial.data(), 0);
  EXPECT_GT(max_abs_diff(a, initial), 1e-2);  // training moved the weights far more than the tolerance
}

#ifdef DDPX_HAVE_MPI
TEST(MlpCpuTraining, TwoMpiRanksEqualOneRankWithTheWholeBatch) { expect_two_ranks_equal_one(""); }
#endif
#ifdef DDPX_HAVE_GLOO
TEST(MlpCpuTraining, TwoGlooRanksEqualOneRankWithTheWholeBatch) { expect_two_ranks_equal_one(" --backend gloo"); }
#endif

// GPU path (the lead runs these on the GPU machine).
TEST(MlpCudaTraining, TrainsInEveryPrecisionWithDdpAndCudaGraphs) {
  DDPX_REQUIRE_GPU();
  for (const char* precision : {"fp32", "tf32", "bf16"}) {
    // SGD: its graph replay is exact, so --cuda-graph on captures whole steps (AdamW's would be refused).
    TrainOptions o = mlp_run(Device::cuda, "sgd");
    o.precision = parse_precision(precision);
    o.batch = 16;
    o.steps = 60;
    o.ddp = true;  // world 1: the reducer runs, NCCL averages over one rank
    o.cuda_graph = GraphPolicy::on;
    const TrainSummary s = run_training(o);
    EXPECT_TRUE(std::isfinite(s.final_loss)) << precision;
    EXPECT_LT(s.final_loss, 0.35 * s.first_loss) << precision << ": " << s.first_loss << " -> " << s.final_loss;
  }
}

// The allreduce hook at one rank reads nothing (comm_hook_reads_bucket), so in bf16 a world-1 DDP run keeps the
// plain run's bf16 weight gradients (Note [bf16 weight gradients in their fp32 slots]) and equals it; with
// --weight-grads fp32 both equal each other again. Eager and graph-replayed steps agree throughout.
TEST(MlpCudaTraining, GraphStepsEqualEagerStepsAndDdpAtWorldOneEqualsPlain) {
  DDPX_REQUIRE_GPU();
  for (const char* precision : {"fp32", "bf16"}) {
    TrainOptions eager = mlp_run(Device::cuda), graphed = mlp_run(Device::cuda), ddp = mlp_run(Device::cuda);
    TrainOptions graphed_fp32_grads = mlp_run(Device::cuda), ddp_fp32_grads = mlp_run(Device::cuda);
    for (TrainOptions* o : {&eager, &graphed, &ddp, &graphed_fp32_grads, &ddp_fp32_grads})
      o->precision = parse_precision(precision);
    eager.cuda_graph = GraphPolicy::off;
    graphed.cuda_graph = ddp.cuda_graph = graphed_fp32_grads.cuda_graph = ddp_fp32_grads.cuda_graph = GraphPolicy::on;
    ddp.ddp = ddp_fp32_grads.ddp = true;
    graphed_fp32_grads.weight_grads = ddp_fp32_grads.weight_grads = WeightGradPolicy::fp32;
    eager.save = scratch(std::string("cuda_eager_") + precision + ".safetensors").string();
    graphed.save = scratch(std::string("cuda_graph_") + precision + ".safetensors").string();
    ddp.save = scratch(std::string("cuda_ddp_") + precision + ".safetensors").string();
    graphed_fp32_grads.save = scratch(std::string("cuda_graph_fp32_grads_") + precision + ".safetensors").string();
    ddp_fp32_grads.save = scratch(std::string("cuda_ddp_fp32_grads_") + precision + ".safetensors").string();
    for (const TrainOptions* o : {&eager, &graphed, &ddp, &graphed_fp32_grads, &ddp_fp32_grads}) run_training(*o);
    EXPECT_EQ(max_abs_diff(saved_weights(eager.save, kModel), saved_weights(graphed.save, kModel)), 0.0) << precision;
    EXPECT_EQ(max_abs_diff(saved_weights(graphed.save, kModel), saved_weights(ddp.save, kModel)), 0.0) << precision;
    EXPECT_EQ(max_abs_diff(saved_weights(graphed_fp32_grads.save, kModel), saved_weights(ddp_fp32_grads.save, kModel)),
              0.0)
        << precision;
    if (std::string(precision) == "fp32") {
      EXPECT_EQ(max_abs_diff(saved_weights(graphed.save, kModel), saved_weights(graphed_fp32_grads.save, kModel)), 0.0)
          << "fp32 ignores --weight-grads";
    } else {
      EXPECT_GT(max_abs_diff(saved_weights(graphed.save, kModel), saved_weights(graphed_fp32_grads.save, kModel)), 0.0)
          << "bf16: the default rounds the weight gradients as autocast does";
    }
  }
}

TEST(MlpCudaTraining, MatchesTheCpuEngineInFp32) {
  DDPX_REQUIRE_GPU();
  TrainOptions gpu = mlp_run(Device::cuda), cpu = mlp_run(Device::cpu);
  gpu.steps = cpu.steps = 5;
  gpu.cuda_graph = GraphPolicy::off;
  gpu.save = scratch("gpu_fp32.safetensors").string();
  cpu.save = scratch("cpu_fp32.safetensors").string();
  run_training(gpu);
  run_training(cpu);
  EXPECT_LT(max_abs_diff(saved_weights(gpu.save, kModel), saved_weights(cpu.save, kModel)), 2e-4);
}

}  // namespace
}  // namespace ddpx
