// The trainer's family-independent properties on the CPU, on every model family's test shape (family_models.hpp:
// the registry's test_variant rows, so a new family is covered by its row): a resumed run equals the uninterrupted
// run bit for bit (and a resume on other data, another accumulation or another shape is refused); the optimizer
// overlapped with backward gives the after-backward update's weights bit for bit; a learnable run's loss starts
// about uniform over the classes and falls clearly; two CPU ranks (MPI, Gloo) train exactly like one rank with the
// whole batch. The GPU forms are test_family_properties_cuda.cpp's.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <tuple>

#include "error_expect.hpp"
#include "family_models.hpp"
#include "model/model_registry.hpp"
#include "saved_weights.hpp"
#include "support/scratch_dir.hpp"
#include "train/trainer.hpp"
#include "train_runs.hpp"
#include "two_ranks.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using testing::family_test_models;
using testing::family_run;
using testing::saved_weights;
using testing::test_name_part;

// (model, optimizer)
class FamilyResume : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(FamilyResume, ResumedRunEqualsUninterruptedRunBitForBit) {
  const auto& [model, optimizer] = GetParam();
  const fs::path dir = testing::fresh_dir("family", "resume_" + model + "_" + optimizer);
  TrainOptions full = family_run(model, optimizer);
  full.steps = 8;
  full.save = (dir / "full.safetensors").string();
  run_training(full);

  TrainOptions first = family_run(model, optimizer);
  first.steps = 5;
  first.checkpoint_dir = (dir / "ckpt").string();
  first.checkpoint_every = 5;
  run_training(first);

  TrainOptions resumed = family_run(model, optimizer);
  resumed.steps = 8;
  resumed.resume = (dir / "ckpt").string();
  resumed.save = (dir / "resumed.safetensors").string();
  run_training(resumed);

  const auto a = saved_weights(full.save, model), b = saved_weights(resumed.save, model);
  ASSERT_EQ(a.size(), b.size());
  size_t differing = 0;
  for (size_t i = 0; i < a.size(); ++i) differing += a[i] != b[i];
  EXPECT_EQ(differing, 0u) << "weights after resume differ from the uninterrupted run";

  // Resuming on other data or another accumulation would silently continue a different data stream.
  TrainOptions other_data = resumed, other_accum = resumed;
  other_data.data = resumed.data == DataSource::learnable ? DataSource::synthetic : DataSource::learnable;
  other_accum.grad_accum = 2;
  testing::expect_error([&] { run_training(other_data); }, {"trained with --data"});
  testing::expect_error([&] { run_training(other_accum); }, {"--grad-accum"});
  // The checkpoint records the model's spec: resuming it as another shape of the family is refused naming both.
  TrainOptions other_shape = resumed;
  other_shape.model = model + ":classes=5";
  testing::expect_error([&] { run_training(other_shape); },
                        {"saved with --model " + model + " ", "--model " + make_model(other_shape.model)->spec()});
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Families, FamilyResume,
                         ::testing::Combine(::testing::ValuesIn(family_test_models()),
                                            ::testing::Values("sgd", "adamw")),
                         [](const ::testing::TestParamInfo<FamilyResume::ParamType>& info) {
                           return test_name_part(std::get<0>(info.param) + "_" + std::get<1>(info.param));
                         });

// Note [Optimizer overlapped with backward] (train/step_engine.hpp): span-by-span updates during the backward pass
// (no reducer) or after each bucket's reduction (reducer, here at world 1) equal one update after backward, bit
// for bit, for SGD with momentum, Nesterov and weight decay and for AdamW, with and without accumulation.
struct OverlapCase {
  std::string optimizer;
  bool nesterov;
  bool ddp;
  int64_t grad_accum;
};

class FamilyTraining : public ::testing::TestWithParam<std::string> {};

// One test per family running every case (one process: each CTest entry costs a process start).
TEST_P(FamilyTraining, OverlappedUpdatesEqualTheUpdateAfterBackwardBitForBit) {
  const std::string& model = GetParam();
  const OverlapCase cases[] = {{"sgd", false, false, 1},   {"sgd", true, false, 1},   {"sgd", true, true, 1},
                               {"sgd", false, true, 3},    {"adamw", false, false, 1}, {"adamw", false, true, 1},
                               {"adamw", false, false, 2}};
  for (const OverlapCase& c : cases) {
    const std::string name = c.optimizer + (c.nesterov ? "_nesterov" : "") + (c.ddp ? "_ddp" : "") + "_accum" +
                             std::to_string(c.grad_accum);
    SCOPED_TRACE(name);
    const fs::path dir = testing::fresh_dir("family", "overlap_" + model + "_" + name);
    TrainOptions overlapped = family_run(model, c.optimizer), after = family_run(model, c.optimizer);
    for (TrainOptions* o : {&overlapped, &after}) {
      o->steps = 4;
      o->optimizer.nesterov = c.nesterov;
      o->ddp = c.ddp;
      o->backend = BackendChoice::named("self");  // one process runs both trainings: MPI could be initialized once
      o->grad_accum = c.grad_accum;
      o->bucket_mb = 0.02;  // a test shape (vit_tiny_test 0.08 MB, mlp_tiny_test 0.1 MB) in several buckets
      o->first_bucket_mb = 0.02;
    }
    overlapped.optimizer_overlap = OverlapPolicy::on;
    after.optimizer_overlap = OverlapPolicy::off;
    overlapped.save = (dir / "overlapped.safetensors").string();
    after.save = (dir / "after.safetensors").string();
    run_training(overlapped);
    run_training(after);
    EXPECT_EQ(saved_weights(overlapped.save, model), saved_weights(after.save, model));
    fs::remove_all(dir);
  }
}

TEST_P(FamilyTraining, LearnableLossFallsClearly) {
  TrainOptions o = family_run(GetParam(), "adamw");
  o.batch = 16;
  o.steps = 120;
  o.optimizer.lr = 2e-3f;
  const TrainSummary s = run_training(o);
  // A fresh model is about uniform over its classes (the ViT's zero-initialized head exactly).
  EXPECT_NEAR(s.first_loss, std::log(static_cast<double>(make_model(GetParam())->num_classes())), 0.3);
  EXPECT_LT(s.final_loss, 0.35 * s.first_loss) << "first " << s.first_loss << " final " << s.final_loss;
}

INSTANTIATE_TEST_SUITE_P(Families, FamilyTraining, ::testing::ValuesIn(family_test_models()),
                         testing::FamilyTestName());

// Two CPU ranks on batch 4 each equal one rank on batch 8 (two_ranks.hpp), through ddpx's own launcher: over MPI,
// and over Gloo, where the TCP rendezvous' all-gather connects them (no mpirun). (model, backend)
class FamilyCpuRanks : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(FamilyCpuRanks, TwoRanksEqualOneRankWithTheWholeBatch) {
  const auto& [model, backend] = GetParam();
#ifndef DDPX_HAVE_MPI
  if (backend == "mpi") GTEST_SKIP() << "this build has no MPI";
#endif
#ifndef DDPX_HAVE_GLOO
  if (backend == "gloo") GTEST_SKIP() << "this build has no Gloo";
#endif
  testing::expect_two_ranks_equal_one(model, "cpu", backend == "gloo" ? " --backend gloo" : "");
}

INSTANTIATE_TEST_SUITE_P(Families, FamilyCpuRanks,
                         ::testing::Combine(::testing::ValuesIn(family_test_models()),
                                            ::testing::Values("mpi", "gloo")),
                         [](const ::testing::TestParamInfo<FamilyCpuRanks::ParamType>& info) {
                           return test_name_part(std::get<0>(info.param) + "_" + std::get<1>(info.param));
                         });

}  // namespace
}  // namespace ddpx
