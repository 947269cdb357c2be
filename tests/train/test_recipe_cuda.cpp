// The recipe's CUDA forms through the trainer, against the CPU engine (they passed on an H100 on 2026-12-05, and the
// CUDA engine has taken the recipe's flags since). On every machine: the CUDA engine's options take every recipe
// flag with the CPU engine's value checks; mixing runs never replay graphs. On a GPU (GPU-labelled, they skip without
// one): each feature alone (the weight average also on --ema-every 3's cadence), then all of them, trains
// vit_tiny_test and mlp_tiny_test in fp32 to the CPU engine's weights (and EMA) within the fp32 tolerance of
// CudaFamilyTraining.MatchesTheCpuEngineInFp32; a replayed graph of a recipe step equals the eager step bit for bit.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "error_expect.hpp"
#include "gpu_guard.hpp"
#include "io/param_safetensors.hpp"
#include "model/model_registry.hpp"
#include "resume_checks.hpp"
#include "saved_weights.hpp"
#include "train/engine_options.hpp"
#include "train/recipe_options.hpp"
#include "train/step_graphs.hpp"
#include "train/trainer.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using testing::saved_weights;
using testing::max_abs_diff;

fs::path scratch(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("ddpx_test_recipe_cuda_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}


TEST(CudaRecipe, TheCudaEngineTakesEveryRecipeFlagAndStillChecksTheirValues) {
  // Verified on an H100 on 2026-12-05 (EachFeatureTrainsAsTheCpuEngine, ReplayedRecipeStepsEqualEagerSteps below),
  // the recipe is no longer refused on --device cuda; the value checks are the same on both engines.
  EngineOptions o;
  o.device = Device::cuda;
  o.precision = Precision::bf16;
  o.recipe.label_smoothing = 0.1;
  o.recipe.clip_grad_norm = 1;
  o.recipe.no_decay = true;
  o.recipe.ema_decay = 0.99;
  o.recipe.mix = MixSettings{.mixup_alpha = 0.2, .cutmix_alpha = 1.0};
  EXPECT_NO_THROW(o.validate());
  EngineOptions bad = o;
  bad.recipe.label_smoothing = 1.5;
  testing::expect_error([&] { bad.validate(); }, {"--label-smoothing"});
  bad = o;
  bad.recipe.ema_decay = -1;
  testing::expect_error([&] { bad.validate(); }, {"--ema-decay"});
}

TEST(CudaRecipe, OverlappedUpdatesStopWhereTheRecipeNeedsTheWholeStep) {
  TrainOptions o;
  o.optimizer_overlap = OverlapPolicy::automatic;
  EXPECT_TRUE(updates_overlap_backward(o, /*with_reducer=*/true));
  EXPECT_FALSE(updates_overlap_backward(o, /*with_reducer=*/false));
  o.recipe.clip_grad_norm = 1;
  EXPECT_FALSE(updates_overlap_backward(o, true));  // the norm needs every bucket first
  o.recipe.clip_grad_norm = 0;
  o.recipe.no_decay = true;
  EXPECT_TRUE(updates_overlap_backward(o, true));  // the CPU engine splits any span into decay runs
  o.device = Device::cuda;
  EXPECT_FALSE(updates_overlap_backward(o, true));  // a cast hook's 16-bit wire is one update
}

TrainOptions recipe_case(Device device, const std::string& model, const std::string& feature) {
  TrainOptions o;
  o.device = device;
  o.model = model;
  o.batch = 8;
  o.steps = 6;
  o.warmup_steps = 2;
  o.data = DataSource::learnable;
  o.optimizer = OptimizerSpec{.kind = OptimizerKind::sgd, .lr = 0.05f, .weight_decay = 0.05f, .momentum = 0.9f};
  o.workers = 2;
  o.quiet = true;
  o.seed = 5;
  o.cuda_graph = GraphPolicy::off;
  const bool all = feature == "all";
  if (all || feature == "smoothing") o.recipe.label_smoothing = 0.1;
  if (all || feature == "clip") o.recipe.clip_grad_norm = 0.5;
  if (all || feature == "no_decay") o.recipe.no_decay = true;
  if (all || feature == "ema") o.recipe.ema_decay = 0.8;
  if (feature == "ema_every") {  // --ema-every 3: the host picks the steps that update (never in a graph)
    o.recipe.ema_decay = 0.8;
    o.recipe.ema_cadence.every = 3;
  }
  if (all || feature == "mix") o.recipe.mix = MixSettings{.mixup_alpha = 0.2, .cutmix_alpha = 1.0};
  o.save = scratch(model + "_" + feature + (device == Device::cuda ? "_cuda" : "_cpu") + ".safetensors").string();
  return o;
}

TEST(CudaRecipe, EachFeatureTrainsAsTheCpuEngine) {
  DDPX_REQUIRE_GPU();
  for (const std::string model : {"vit_tiny_test", "mlp_tiny_test"}) {
    for (const std::string feature : {"smoothing", "clip", "no_decay", "ema", "ema_every", "mix", "all"}) {
      SCOPED_TRACE(model + " " + feature);
      TrainOptions gpu = recipe_case(Device::cuda, model, feature), cpu = recipe_case(Device::cpu, model, feature);
      run_training(gpu);
      run_training(cpu);
      EXPECT_LT(max_abs_diff(saved_weights(gpu.save, model), saved_weights(cpu.save, model)), 2e-4);
      if (gpu.recipe.ema_decay != 0)
        EXPECT_LT(max_abs_diff(saved_weights(weight_average_path(gpu.save), model),
                               saved_weights(weight_average_path(cpu.save), model)), 2e-4);
    }
  }
}

TEST(CudaRecipe, ReplayedRecipeStepsEqualEagerSteps) {
  DDPX_REQUIRE_GPU();
  // Everything a graph can hold (mixing cannot: its draw is per batch): smoothing, clipping, no-decay, EMA.
  TrainOptions eager = recipe_case(Device::cuda, "vit_tiny_test", "all"), graphed = eager;
  eager.recipe.mix = graphed.recipe.mix = MixSettings{};
  eager.steps = graphed.steps = 10;
  graphed.cuda_graph = GraphPolicy::on;
  graphed.save = scratch("graphed_all_cuda.safetensors").string();
  run_training(eager);
  run_training(graphed);
  EXPECT_EQ(max_abs_diff(saved_weights(eager.save, eager.model), saved_weights(graphed.save, eager.model)), 0.0);
  EXPECT_EQ(max_abs_diff(saved_weights(weight_average_path(eager.save), eager.model),
                         saved_weights(weight_average_path(graphed.save), eager.model)), 0.0);
}

TEST(CudaRecipe, ResumeContinuesTheWeightAverageBitForBit) {
  DDPX_REQUIRE_GPU();
  // The CUDA engine's average goes into checkpoints and comes back on --resume (873c677): a run interrupted at a
  // checkpoint and resumed ends with the uninterrupted run's weights and average, bit for bit (eager steps; the
  // average and the weights are device state, the data order and mixing draws depend on the step only).
  TrainOptions full = recipe_case(Device::cuda, "vit_tiny_test", "all");
  full.steps = 8;
  full.save = scratch("ema_straight_cuda.safetensors").string();
  testing::expect_resume_continues_the_weight_average(full, scratch("ema_ckpt_cuda").string(),
                                                      scratch("ema_resumed_cuda.safetensors").string());
}

}  // namespace
}  // namespace ddpx
