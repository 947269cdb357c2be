// The second model family through the same trainer (the "which model" seam, issue 14): its run report gives the
// step breakdown and `ddpx eval` scores its saved weights. GPU-labelled (skipped without a GPU): on CUDA through
// run_training in every precision, with DDP and CUDA graphs, the loss falls clearly. What holds for every family
// (resume, overlap, N ranks equal one, graph equals eager, CUDA equals CPU) is test_family_properties*.cpp's.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "gpu_guard.hpp"
#include "io/npy.hpp"
#include "train/trainer.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
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

}  // namespace
}  // namespace ddpx
