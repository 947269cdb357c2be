// The trainer's family-independent properties on the GPU, on every model family's test shape (family_models.hpp),
// GPU-labelled: each skips where no GPU is found (gpu_guard.hpp). The CUDA engine matches the CPU engine in fp32;
// whole-step CUDA graphs replay the eager steps bit for bit; DDP at world 1 equals plain training bit for bit,
// eager and graph-replayed, in fp32 and bf16, with bf16 or fp32 weight gradients; two GPUs (where a machine has
// them) equal one GPU with the whole batch. The CPU forms are test_family_properties.cpp's. Each property is one
// test running its cases (each CTest entry costs a process start, also where it skips).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "family_models.hpp"
#include "gpu_guard.hpp"
#include "report/step_record.hpp"
#include "saved_weights.hpp"
#include "shared_gpu_ranks.hpp"
#include "train/trainer.hpp"
#include "train_runs.hpp"
#include "two_ranks.hpp"

namespace ddpx {
namespace {

using testing::family_test_models;
using testing::gpu_run;
using testing::max_abs_diff;
using testing::saved_weights;
using testing::scratch;

// A scratch file of this test's model.
std::string file(const std::string& model, const std::string& name) { return scratch(model + "_" + name).string(); }

class CudaFamilyTraining : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaFamilyTraining, MatchesTheCpuEngineInFp32) {
  DDPX_REQUIRE_GPU();
  const std::string& model = GetParam();
  TrainOptions gpu = gpu_run(model), cpu = gpu_run(model);
  cpu.device = Device::cpu;
  gpu.steps = cpu.steps = 5;
  gpu.cuda_graph = GraphPolicy::off;
  gpu.save = file(model, "gpu_fp32.safetensors");
  cpu.save = file(model, "cpu_fp32.safetensors");
  run_training(gpu);
  run_training(cpu);
  // 5 SGD steps of lr 0.05 on fp32 with different summation orders: weights agree to ~1e-5 absolute.
  EXPECT_LT(max_abs_diff(saved_weights(gpu.save, model), saved_weights(cpu.save, model)), 2e-4);
}

// Whole-step graphs replay the eager steps: the same kernels in the same order, so the weights are bit-identical
// (allow nothing), in fp32 and bf16. The allreduce hook at one rank reads nothing (comm_hook_reads_bucket), so
// `--ddp` there keeps the plain run's gradients, bf16 weight gradients included (Note [bf16 weight gradients in
// their fp32 slots]), with its buckets updated as they become ready: the same weights bit for bit, eager and
// graph-replayed. With --weight-grads fp32 both equal each other again; fp32 ignores the flag, while in bf16 the
// default rounds the weight gradients as autocast does, so the two differ.
TEST_P(CudaFamilyTraining, GraphStepsEqualEagerStepsAndDdpAtWorldOneEqualsPlain) {
  DDPX_REQUIRE_GPU();
  const std::string& model = GetParam();
  for (const char* precision : {"fp32", "bf16"}) {
    std::vector<float> eager, graphed;  // the plain run's weights with --cuda-graph off and on
    for (const char* graph : {"off", "on"}) {
      TrainOptions plain = gpu_run(model), ddp = gpu_run(model);
      TrainOptions plain_fp32_grads = gpu_run(model), ddp_fp32_grads = gpu_run(model);
      for (TrainOptions* o : {&plain, &ddp, &plain_fp32_grads, &ddp_fp32_grads}) {
        o->precision = parse_precision(precision);
        o->cuda_graph = parse_graph_policy(graph);
      }
      ddp.ddp = ddp_fp32_grads.ddp = true;
      ddp.bucket_mb = ddp.first_bucket_mb = 0.02;  // several buckets, each updated once ready
      ddp_fp32_grads.bucket_mb = ddp_fp32_grads.first_bucket_mb = 0.02;
      plain_fp32_grads.weight_grads = ddp_fp32_grads.weight_grads = WeightGradPolicy::fp32;
      plain.save = file(model, "plain.safetensors");
      ddp.save = file(model, "ddp.safetensors");
      plain_fp32_grads.save = file(model, "plain_fp32_grads.safetensors");
      ddp_fp32_grads.save = file(model, "ddp_fp32_grads.safetensors");
      plain.report = file(model, "plain.json");
      ddp.report = file(model, "ddp.json");
      for (const TrainOptions* o : {&plain, &ddp, &plain_fp32_grads, &ddp_fp32_grads}) run_training(*o);
      const std::string where = std::string(precision) + ", graph " + graph;
      EXPECT_EQ(max_abs_diff(saved_weights(plain.save, model), saved_weights(ddp.save, model)), 0.0) << where;
      const std::string expected = std::string(precision) == "bf16" ? "bf16" : "fp32";
      EXPECT_EQ(load_run_report(ddp.report).config.weight_grads, expected) << where;
      EXPECT_EQ(load_run_report(plain.report).config.weight_grads, expected) << where;
      EXPECT_EQ(max_abs_diff(saved_weights(plain_fp32_grads.save, model), saved_weights(ddp_fp32_grads.save, model)),
                0.0)
          << where;
      if (std::string(precision) == "fp32") {
        EXPECT_EQ(max_abs_diff(saved_weights(plain.save, model), saved_weights(plain_fp32_grads.save, model)), 0.0)
            << where << ": fp32 ignores --weight-grads";
      } else {
        EXPECT_GT(max_abs_diff(saved_weights(plain.save, model), saved_weights(plain_fp32_grads.save, model)), 0.0)
            << where << ": bf16: the default rounds the weight gradients as autocast does";
      }
      (std::string(graph) == "on" ? graphed : eager) = saved_weights(plain.save, model);
    }
    EXPECT_EQ(max_abs_diff(eager, graphed), 0.0) << precision << ": graph-replayed steps differ from eager steps";
  }
}

// Two ranks equal one with the whole batch (two_ranks.hpp): NCCL through ddpx's own launcher, whole-step graphs
// holding the collectives. On a one-GPU machine both ranks share it where NCCL 2.30+ is loaded (shared_gpu_ranks.hpp).
TEST_P(CudaFamilyTraining, TwoGpusEqualOneGpuWithTheWholeBatch) {
  DDPX_REQUIRE_GPU_RANKS(two, 2);
  testing::expect_two_ranks_equal_one(GetParam(), "cuda", "", two.flags);
}

INSTANTIATE_TEST_SUITE_P(Families, CudaFamilyTraining, ::testing::ValuesIn(family_test_models()),
                         testing::FamilyTestName());

}  // namespace
}  // namespace ddpx
